/*
 * disaggsim: Fastpass tests against hand-derived values and independent checks
 * (transports/fastpass/doc/fastpass.md).
 *
 * 1. Lone flow: FCT = ideal FCT + the request-allocation delay, derived by hand below (FCP
 *    AREQ and per-flow REQUEST).
 * 2. Random load: every allocated timeslot is a matching (each host sends and receives at
 *    most one packet), maximal (checked here against the unserved demands), its inter-rack
 *    packets are spread so that no ToR-spine link gets more packets than it serializes in a
 *    timeslot, and on the wire every data frame leaves its host exactly at the start of the
 *    timeslot it carries, at most one per host and timeslot sent and received.
 * 3. Permutation at full load on a fabric of equal-rate links: no switch queue ever holds
 *    two data frames (peak <= one data frame + one ALLOC) and no data frame waits for another
 *    (its only waits are behind control frames, which share the FIFO ports).
 * 4. Aggregation (FCP): 100 flows of one host starting together cost one AREQ; 100 starting
 *    over a batch at most one per timeslot (per-flow requests: one per flow).
 * 5. Loss (both request modes): a data frame dropped in a switch is recovered through
 *    PROBE/MISSING and the arbiter; a dropped ALLOC through the repeated request and the
 *    arbiter.
 * 6. Incast: 3000 flows from 4 hosts to 2 receivers within 1 ms (40 Gbps) and 2000 from 3 to
 *    1 within 100 us (10 Gbps) all finish with no frame dropped (REQUESTs included).
 */
#include "topologies/model/drop-tail-ecn-queue.h"
#include "transports/fastpass/helper/fastpass-helper.h"
#include "transports/fastpass/model/fastpass-header.h"

#include "ns3/boolean.h"
#include "ns3/config.h"
#include "ns3/data-rate.h"
#include "ns3/double.h"
#include "ns3/nstime.h"
#include "ns3/packet.h"
#include "ns3/random-variable-stream.h"
#include "ns3/rng-seed-manager.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/test.h"
#include "ns3/uinteger.h"

#include <map>
#include <set>
#include <utility>
#include <vector>

using namespace ns3;

namespace
{

/// A fabric with Fastpass on it.
struct Bench
{
    Ptr<ClosTopology> topology;
    Ptr<FastpassFlowTransport> transport;
    std::map<uint64_t, Time> finish;

    Bench (uint32_t racks, uint32_t hostsPerRack, uint32_t spines, uint32_t factor, Time processing,
           const ObjectFactory* switchQueue = nullptr, uint32_t bufferBytes = 36864,
           const std::string& order = "FewestRemaining")
    {
        topology = CreateObject<ClosTopology> ();
        topology->SetAttribute ("Racks", UintegerValue (racks));
        topology->SetAttribute ("HostsPerRack", UintegerValue (hostsPerRack));
        topology->SetAttribute ("Spines", UintegerValue (spines));
        topology->SetAttribute ("SpineRateFactor", UintegerValue (factor));
        topology->SetAttribute ("BufferBytes", UintegerValue (bufferBytes));
        transport = CreateObject<FastpassFlowTransport> ();
        transport->SetAttribute ("ProcessingLatency", TimeValue (processing));
        transport->SetAttribute ("Order", StringValue (order));
        transport->ConfigureFabric (topology);
        if (switchQueue != nullptr)
        {
            topology->SetSwitchQueue (*switchQueue);
        }
        topology->Build ();
        transport->Install (topology);
        transport->TraceConnectWithoutContext ("FlowFinished",
                                               MakeCallback (&Bench::OnFinished, this));
    }

    void OnFinished (uint64_t flowId, Time at)
    {
        finish[flowId] = at;
    }
};

class LoneFlowCase : public TestCase
{
  public:
    explicit LoneFlowCase (bool perDestination)
          : TestCase (std::string ("lone flow, ") +
                      (perDestination ? "FCP AREQ" : "per-flow REQUEST") +
                      ": FCT = ideal + request + processing + allocation + slot wait")
          , m_perDestination (perDestination)
    {
    }

  private:
    void DoRun () override
    {
        {
            // 2 racks x 4 hosts, 2 spines at 160 Gbps, 40 Gbps access, arbiter on ToR 0
            // with a 4 m cable at 40 Gbps, ProcessingLatency 1 us, batches of 8.
            Config::SetDefault ("ns3::FastpassFlowTransport::PerDestinationRequests",
                                BooleanValue (m_perDestination));
            Bench bench (2, 4, 2, 4, MicroSeconds (1));
            Config::SetDefault ("ns3::FastpassFlowTransport::PerDestinationRequests",
                                BooleanValue (true));
            const FlowSpec flow{1, 1000, 0, 4, 3 * 1460 + 100};
            bench.transport->AddFlow (flow);
            Simulator::Run ();
            // By hand (ps resolution; cables 20 ns (4 m) and 200 ns (40 m), switch 240 ns):
            // timeslot T = 1500 B + 94 B guard at 40 Gbps = 318.8 ns; epoch 8 T = 2550.4 ns.
            NS_TEST_ASSERT_MSG_EQ (bench.transport->GetTimeslot (), PicoSeconds (318800), "T");
            // Lead.  An ALLOC of 8 timeslots is 18 + 22 + 8 x 4 = 72 B under FCP (14.4 ns at
            // 40 Gbps, 3.6 ns at 160 Gbps), 18 + 22 + 8 x 11 = 128 B per flow (25.6 / 6.4
            // ns).  Slowest delivery (to rack 1), FCP: head at ToR 20; ToR sends to the
            // spine at 20 + 240 + (14.4 - 3.6) = 270.8; head at spine 470.8; spine sends at
            // 710.8; head at ToR 1 910.8; ToR sends at 1150.8; tail at host 1150.8 + 14.4 +
            // 20 = 1185.2 ns (per flow: 1204.8).  Drain of 7 other ALLOCs: 100.8 ns (179.2).
            // Longest host control frame (MISSING of 64: 296 B): 59.2 ns.  3 switch ports x
            // 318.8 (data frames it may queue behind) = 956.4 ns, + the spread of data paths
            // at the last port: a full frame takes 1685 ns across racks (below), 20 + 240 +
            // 300 + 20 = 580 ns within one: 1105 ns.  Lead = 1000 + 1185.2 + 100.8 + 59.2 +
            // 956.4 + 1105 = 4406.6 ns -> 14 timeslots (per flow 4504.6 ns -> 15).
            const int64_t lead = m_perDestination ? 14 : 15;
            NS_TEST_ASSERT_MSG_EQ (bench.transport->GetLeadSlots (), lead, "lead");
            // REQUEST (FCP AREQ of one destination: 50 B, 10 ns; per flow 40 B, 8 ns) host
            // 0 -> arbiter on the same ToR: 20 + 240 + 10 + 20 = 290 ns (288): at the arbiter
            // at 1290 (1288) ns.  Next pass at 2550.4 ns; its ALLOC leaves at 3550.4 ns and
            // gives timeslots 8 + 14 = 22..25 (23..26): the packets leave at 7013.6, 7332.4,
            // 7651.2 and 7970 ns (+ 318.8 per flow).  A full packet (1500 B) reaches the last
            // link (ToR 1 -> host 4) 300 + 20 + 2 x 200 + 3 x 240 + (300 - 75) - 300 - 20 =
            // 1365 ns after leaving: the third is on it 9016.2 .. 9316.2 ns.  The last (140
            // B: 28 ns at 40 Gbps, 7 at 160) would reach it 28 + 20 + 400 + 720 + 21 - 28 -
            // 20 = 1141 ns after leaving, at 9111 ns, so it waits: 9316.2 .. 9344.2, at host
            // 4 at 9364.2 ns (per flow 9683 ns).
            const int64_t finishPs = m_perDestination ? 9364200 : 9683000;
            NS_TEST_ASSERT_MSG_EQ (bench.finish.count (1), 1, "finished");
            NS_TEST_ASSERT_MSG_EQ (bench.finish[1], PicoSeconds (finishPs), "hand-derived finish");
            // Ideal: 3 x 300 + 28 + 40 + 400 + 720 + (300 - 75) = 2313 ns; FCT 8364.2 ns =
            // ideal + request-allocation delay 6051.2 ns (slowdown 3.62; per flow 8683 ns).
            const Time ideal = bench.topology->IdealFct (0, 4, flow.sizeBytes, 22, 1460);
            NS_TEST_ASSERT_MSG_EQ (ideal, NanoSeconds (2313), "ideal FCT");
            NS_TEST_ASSERT_MSG_EQ (bench.transport->GetLoneFlowExtraDelay (flow),
                                   PicoSeconds (finishPs - 1000000 - 2313000),
                                   "declared extra delay");
            // OneWay agrees with IdealFct for one full packet across racks.
            NS_TEST_ASSERT_MSG_EQ (bench.transport->OneWay (0, 4, 1500),
                                   bench.topology->IdealFct (0, 4, 1460, 22, 1460), "one way");
            NS_TEST_ASSERT_MSG_EQ (bench.transport->OneWay (0, 4, 1500), NanoSeconds (1685),
                                   "one way across racks");
        }
        Simulator::Destroy ();
    }

    bool m_perDestination;
};

/// Records the allocator's timeslots and the data frames on the host links.
struct SlotChecker
{
    uint32_t hostsPerRack{1};
    uint32_t nSpines{1};
    uint32_t capacity{1};
    Time timeslot;
    uint64_t slots{0};
    uint64_t grants{0};
    uint64_t notMatching{0};
    uint64_t notMaximal{0};
    uint64_t overUplink{0};
    uint64_t offSlot{0};
    uint64_t dataFrames{0};
    std::map<std::pair<uint32_t, uint64_t>, uint32_t> sentPerHostSlot;
    std::map<std::pair<uint32_t, uint64_t>, uint32_t> rcvdPerHostSlot;

    void OnSlot (const FastpassSlotRecord& record)
    {
        ++slots;
        std::set<uint16_t> srcs;
        std::set<uint16_t> dsts;
        std::map<std::pair<uint32_t, uint16_t>, uint32_t> up;
        std::map<std::pair<uint16_t, uint32_t>, uint32_t> down;
        for (const FastpassGrant& grant : record.grants)
        {
            ++grants;
            notMatching += srcs.insert (grant.src).second ? 0 : 1;
            notMatching += dsts.insert (grant.dst).second ? 0 : 1;
            const uint32_t sr = grant.src / hostsPerRack;
            const uint32_t dr = grant.dst / hostsPerRack;
            if (sr != dr)
            {
                overUplink += grant.spine >= nSpines ? 1 : 0;
                overUplink += ++up[{sr, grant.spine}] > capacity ? 1 : 0;
                overUplink += ++down[{grant.spine, dr}] > capacity ? 1 : 0;
            }
        }
        for (const auto& [src, dst] : record.unserved)
        {
            if (srcs.count (src) == 0 && dsts.count (dst) == 0)
            {
                ++notMaximal;
            }
        }
    }

    static FastpassHeader Peek (Ptr<const Packet> packet)
    {
        FastpassHeader header;
        packet->PeekHeader (header);
        return header;
    }

    void OnTx (Ptr<const Packet> packet, const FabricHeader& frame)
    {
        if (frame.payloadBytes == 0)
        {
            return;
        }
        ++dataFrames;
        const FastpassHeader header = Peek (packet);
        if (Simulator::Now () != timeslot * static_cast<int64_t> (header.slot))
        {
            ++offSlot;
            std::cerr << "off " << frame.srcHost << " slot " << header.slot << " at "
                      << Simulator::Now ().GetPicoSeconds () << " want "
                      << (timeslot * static_cast<int64_t> (header.slot)).GetPicoSeconds () << "\n";
        }
        ++sentPerHostSlot[{frame.srcHost, header.slot}];
    }

    void OnRx (Ptr<const Packet> packet, const FabricHeader& frame)
    {
        if (frame.payloadBytes > 0)
        {
            ++rcvdPerHostSlot[{frame.dstHost, Peek (packet).slot}];
        }
    }

    uint32_t MaxPerHostSlot (const std::map<std::pair<uint32_t, uint64_t>, uint32_t>& m) const
    {
        uint32_t most = 0;
        for (const auto& [key, n] : m)
        {
            most = std::max (most, n);
        }
        return most;
    }

    void Connect (Bench& bench)
    {
        hostsPerRack = bench.topology->GetHostsPerRack ();
        nSpines = bench.topology->GetNSpines ();
        UintegerValue factor;
        bench.topology->GetAttribute ("SpineRateFactor", factor);
        capacity = static_cast<uint32_t> (factor.Get ());
        timeslot = bench.transport->GetTimeslot ();
        bench.transport->GetArbiter ()->TraceConnectWithoutContext (
            "SlotAllocated", MakeCallback (&SlotChecker::OnSlot, this));
        for (uint32_t h = 0; h < bench.topology->GetNHosts (); ++h)
        {
            bench.topology->GetHostDevice (h)->TraceConnectWithoutContext (
                "Tx", MakeCallback (&SlotChecker::OnTx, this));
            bench.topology->GetHostDevice (h)->TraceConnectWithoutContext (
                "Rx", MakeCallback (&SlotChecker::OnRx, this));
        }
    }
};

class RandomLoadCase : public TestCase
{
  public:
    RandomLoadCase (uint32_t spines, uint32_t factor, std::string order)
          : TestCase ("random load on 3 racks x 4 hosts, " + std::to_string (spines) + " spines x" +
                      std::to_string (factor) + ", order " + order +
                      ": timeslots are maximal matchings, uplinks within capacity, frames "
                      "sent exactly in their timeslots")
          , m_spines (spines)
          , m_factor (factor)
          , m_order (std::move (order))
    {
    }

  private:
    void DoRun () override
    {
        RngSeedManager::SetSeed (3);
        {
            Bench bench (3, 4, m_spines, m_factor, NanoSeconds (500), nullptr, 36864, m_order);
            SlotChecker checker;
            checker.Connect (bench);
            Ptr<UniformRandomVariable> u = CreateObject<UniformRandomVariable> ();
            const uint32_t nFlows = 150;
            uint64_t packets = 0;
            for (uint32_t i = 0; i < nFlows; ++i)
            {
                const uint32_t src = u->GetInteger (0, 11);
                uint32_t dst = u->GetInteger (0, 10);
                dst = dst >= src ? dst + 1 : dst;
                const uint64_t size = u->GetInteger (1, 40000);
                packets += (size + 1459) / 1460;
                bench.transport->AddFlow (
                    FlowSpec{i, static_cast<int64_t> (u->GetInteger (0, 50000)), src, dst, size});
            }
            Simulator::Run ();
            const auto stats = bench.transport->GetStatistics ();
            std::map<std::string, std::string> st (stats.begin (), stats.end ());
            NS_TEST_ASSERT_MSG_EQ (st["fastpass.late_allocations"], "0", "ALLOCs in time");
            NS_TEST_ASSERT_MSG_EQ (st["fastpass.retransmissions"], "0", "nothing resent");
            NS_TEST_ASSERT_MSG_EQ (bench.finish.size (), nFlows, "every flow finishes");
            NS_TEST_ASSERT_MSG_GT (checker.slots, 100, "the allocator ran");
            NS_TEST_ASSERT_MSG_EQ (checker.grants, packets, "one grant per packet");
            NS_TEST_ASSERT_MSG_EQ (checker.notMatching, 0, "each timeslot is a matching");
            NS_TEST_ASSERT_MSG_EQ (checker.notMaximal, 0, "each matching is maximal");
            NS_TEST_ASSERT_MSG_EQ (checker.overUplink, 0, "ToR-spine links within capacity");
            NS_TEST_ASSERT_MSG_EQ (checker.dataFrames, packets, "one data frame per packet");
            NS_TEST_ASSERT_MSG_EQ (checker.MaxPerHostSlot (checker.sentPerHostSlot), 1,
                                   "a host sends at most one packet per timeslot");
            NS_TEST_ASSERT_MSG_EQ (checker.MaxPerHostSlot (checker.rcvdPerHostSlot), 1,
                                   "a host receives at most one packet per timeslot");
            NS_TEST_ASSERT_MSG_EQ (checker.offSlot, 0, "frames leave at their timeslot start");
            NS_TEST_ASSERT_MSG_EQ (bench.topology->GetSwitchPortDrops (), 0, "no drop");
        }
        Simulator::Destroy ();
    }

    uint32_t m_spines;
    uint32_t m_factor;
    std::string m_order;
};

class PermutationCase : public TestCase
{
  public:
    PermutationCase ()
          : TestCase ("permutation at full load over equal-rate links: no switch queue holds "
                      "two data frames, no data frame waits for another")
    {
    }

  private:
    void DoRun () override
    {
        {
            // 3 racks x 4 hosts, 4 spines at the access rate: full bisection, every link
            // one packet per timeslot.
            Bench bench (3, 4, 4, 1, NanoSeconds (0));
            std::map<std::pair<uint64_t, uint32_t>, Time> sentAt;
            Time maxExtra (0);
            uint64_t frames = 0;
            auto onTx = [&] (Ptr<const Packet> packet, const FabricHeader& frame)
            {
                if (frame.payloadBytes > 0)
                {
                    FastpassHeader h = SlotChecker::Peek (packet);
                    sentAt[{h.flowId, h.value0}] = Simulator::Now ();
                }
            };
            auto onRx = [&] (Ptr<const Packet> packet, const FabricHeader& frame)
            {
                if (frame.payloadBytes == 0)
                {
                    return;
                }
                ++frames;
                FastpassHeader h = SlotChecker::Peek (packet);
                const Time oneWay = bench.transport->OneWay (
                    frame.srcHost, frame.dstHost, packet->GetSize () + kFabricHeaderBytes);
                maxExtra =
                    std::max (maxExtra, Simulator::Now () - sentAt[{h.flowId, h.value0}] - oneWay);
            };
            Callback<void, Ptr<const Packet>, const FabricHeader&> txCb (onTx);
            Callback<void, Ptr<const Packet>, const FabricHeader&> rxCb (onRx);
            for (uint32_t h = 0; h < 12; ++h)
            {
                bench.topology->GetHostDevice (h)->TraceConnectWithoutContext ("Tx", txCb);
                bench.topology->GetHostDevice (h)->TraceConnectWithoutContext ("Rx", rxCb);
            }
            // Host i -> host (i + 4) mod 12 (every flow crosses racks), 200 full packets
            // each, all at time 0: every host link and every uplink busy every timeslot.
            for (uint32_t i = 0; i < 12; ++i)
            {
                bench.transport->AddFlow (FlowSpec{i, 0, i, (i + 4) % 12, 200ULL * 1460});
            }
            Simulator::Run ();
            NS_TEST_ASSERT_MSG_EQ (bench.finish.size (), 12, "every flow finishes");
            NS_TEST_ASSERT_MSG_EQ (frames, 12 * 200, "every data frame arrives");
            // Data frames never queue behind data frames: the only waits are behind control
            // frames, which share the FIFOs (an ALLOC of 8 entries: 128 B, 25.6 ns at 40
            // Gbps), at most one per switch port on the way (3).
            const Time alloc = NanoSeconds (25) + PicoSeconds (600);
            NS_TEST_ASSERT_MSG_LT_OR_EQ (maxExtra, alloc * 3, "data frames wait for no data frame");
            uint32_t peak = 0;
            for (const Ptr<FabricNetDevice>& port : bench.topology->GetSwitchPorts ())
            {
                peak = std::max (peak, port->GetQueue ()->GetPeakBytes ());
            }
            NS_TEST_ASSERT_MSG_LT (peak, 2 * 1500u, "no switch queue holds two data frames");
            NS_TEST_ASSERT_MSG_LT_OR_EQ (peak, 1500u + 128u, "at most one data frame + one ALLOC");
            // Full load: the 12 x 200 packets take 200 consecutive timeslots per sender.
            const Time last = bench.finish.rbegin ()->second;
            const Time first = bench.finish.begin ()->second;
            NS_TEST_ASSERT_MSG_EQ (last, first, "all flows end in the same timeslot");
        }
        Simulator::Destroy ();
    }
};

/// Drops the first data frame of flow 0 it sees (a switch port; test instrument for loss).
class DropOnceQueue : public DropTailEcnQueue
{
  public:
    static TypeId GetTypeId ()
    {
        static TypeId tid = TypeId ("ns3::FastpassTestDropOnceQueue")
                                .SetParent<DropTailEcnQueue> ()
                                .AddConstructor<DropOnceQueue> ();
        return tid;
    }

    static uint32_t s_dropped;
    static bool s_dropAlloc; ///< drop host 0's first ALLOC instead of a data frame

  protected:
    bool DoEnqueue (FabricQueueItem&& item) override
    {
        if (s_dropped == 0 && s_dropAlloc && item.header.payloadBytes == 0 &&
            item.header.dstHost == 0)
        {
            FastpassHeader header;
            item.packet->PeekHeader (header);
            if (header.type == FastpassHeader::ALLOC || header.type == FastpassHeader::DST_ALLOC)
            {
                ++s_dropped;
                return false;
            }
        }
        if (s_dropped == 0 && !s_dropAlloc && item.header.payloadBytes > 0 &&
            item.header.srcHost == 0)
        {
            FastpassHeader header;
            item.packet->PeekHeader (header);
            if (header.flowId == 0 && header.value0 == 2)
            {
                ++s_dropped;
                return false;
            }
        }
        return DropTailEcnQueue::DoEnqueue (std::move (item));
    }
};

uint32_t DropOnceQueue::s_dropped = 0;
bool DropOnceQueue::s_dropAlloc = false;

class LossCase : public TestCase
{
  public:
    explicit LossCase (bool perDestination)
          : TestCase (std::string ("a data frame lost in a switch is re-requested from the "
                                   "arbiter and resent, ") +
                      (perDestination ? "FCP" : "per-flow requests"))
          , m_perDestination (perDestination)
    {
    }

  private:
    void DoRun () override
    {
        DropOnceQueue::s_dropped = 0;
        {
            ObjectFactory queue;
            queue.SetTypeId (DropOnceQueue::GetTypeId ());
            Config::SetDefault ("ns3::FastpassFlowTransport::PerDestinationRequests",
                                BooleanValue (m_perDestination));
            Bench bench (2, 4, 2, 4, NanoSeconds (0), &queue);
            Config::SetDefault ("ns3::FastpassFlowTransport::PerDestinationRequests",
                                BooleanValue (true));
            bench.transport->AddFlow (FlowSpec{0, 0, 0, 5, 10 * 1460});
            bench.transport->AddFlow (FlowSpec{1, 0, 1, 4, 10 * 1460});
            Simulator::Run ();
            NS_TEST_ASSERT_MSG_EQ (DropOnceQueue::s_dropped, 1, "one frame dropped");
            NS_TEST_ASSERT_MSG_EQ (bench.finish.size (), 2, "both flows finish");
            const auto stats = bench.transport->GetStatistics ();
            std::map<std::string, std::string> s (stats.begin (), stats.end ());
            NS_TEST_ASSERT_MSG_EQ (s["fastpass.retransmissions"], "1", "one retransmission");
            NS_TEST_ASSERT_MSG_EQ (s["fastpass.data_packets_sent"], "21", "20 + 1 packets");
            NS_TEST_ASSERT_MSG_GT (bench.finish[0], bench.finish[1] + MicroSeconds (1),
                                   "the lossy flow waits for the timeout");
        }
        Simulator::Destroy ();
    }

    bool m_perDestination;
};

class AllocLossCase : public TestCase
{
  public:
    explicit AllocLossCase (bool perDestination)
          : TestCase (std::string ("a lost ALLOC: the repeated REQUEST says what arrived, the "
                                   "arbiter grants the lost timeslots again, ") +
                      (perDestination ? "FCP" : "per-flow requests"))
          , m_perDestination (perDestination)
    {
    }

  private:
    void DoRun () override
    {
        DropOnceQueue::s_dropped = 0;
        DropOnceQueue::s_dropAlloc = true;
        {
            ObjectFactory queue;
            queue.SetTypeId (DropOnceQueue::GetTypeId ());
            Config::SetDefault ("ns3::FastpassFlowTransport::PerDestinationRequests",
                                BooleanValue (m_perDestination));
            Bench bench (2, 4, 2, 4, NanoSeconds (0), &queue);
            Config::SetDefault ("ns3::FastpassFlowTransport::PerDestinationRequests",
                                BooleanValue (true));
            bench.transport->AddFlow (FlowSpec{0, 0, 0, 5, 20 * 1460});
            Simulator::Run ();
            NS_TEST_ASSERT_MSG_EQ (DropOnceQueue::s_dropped, 1, "one ALLOC dropped");
            NS_TEST_ASSERT_MSG_EQ (bench.finish.size (), 1, "the flow finishes");
            const auto stats = bench.transport->GetStatistics ();
            std::map<std::string, std::string> s (stats.begin (), stats.end ());
            // The first batch (8 timeslots) was lost: granted again, nothing resent.
            NS_TEST_ASSERT_MSG_EQ (s["fastpass.lost_grants"], "8", "the lost batch");
            NS_TEST_ASSERT_MSG_EQ (s["fastpass.data_packets_sent"], "20", "20 packets");
            NS_TEST_ASSERT_MSG_EQ (s["fastpass.retransmissions"], "0", "nothing resent");
        }
        DropOnceQueue::s_dropAlloc = false;
        Simulator::Destroy ();
    }

    bool m_perDestination;
};

class IncastCase : public TestCase
{
  public:
    IncastCase (uint32_t nFlows, std::vector<uint32_t> senders, std::vector<uint32_t> receivers,
                double rateGbps, int64_t windowNs)
          : TestCase ("incast: " + std::to_string (nFlows) + " flows from " +
                      std::to_string (senders.size ()) + " hosts to " +
                      std::to_string (receivers.size ()) + " receiver(s) within " +
                      std::to_string (windowNs / 1000) + " us at " +
                      std::to_string (static_cast<int> (rateGbps)) +
                      " Gbps all finish, no frame dropped, receivers busy every timeslot")
          , m_nFlows (nFlows)
          , m_senders (std::move (senders))
          , m_receivers (std::move (receivers))
          , m_rateGbps (rateGbps)
          , m_windowNs (windowNs)
    {
    }

  private:
    void DoRun () override
    {
        RngSeedManager::SetSeed (5);
        {
            Config::SetDefault (
                "ns3::ClosTopology::AccessRate",
                DataRateValue (DataRate (static_cast<uint64_t> (m_rateGbps * 1e9))));
            Bench bench (9, 16, 4, 4, NanoSeconds (0));
            Config::SetDefault ("ns3::ClosTopology::AccessRate",
                                DataRateValue (DataRate ("40Gbps")));
            std::map<uint32_t, uint64_t> delivered;
            std::map<uint32_t, uint64_t> packetsTo;
            auto onRx = [&] (Ptr<const Packet> packet, const FabricHeader& frame)
            { delivered[frame.dstHost] += frame.payloadBytes; };
            Callback<void, Ptr<const Packet>, const FabricHeader&> rxCb (onRx);
            for (uint32_t r : m_receivers)
            {
                bench.topology->GetHostDevice (r)->TraceConnectWithoutContext ("Rx", rxCb);
            }
            // Drops: none.  Per-flow REQUESTs of thousands of synchronized flows overflowed
            // the arbiter's ToR port (62 dropped at 10 Gbps); FCP's AREQs carry a host's
            // demand in one frame per send opportunity.
            uint64_t dataDrops = 0;
            uint64_t requestDrops = 0;
            uint64_t otherDrops = 0;
            const uint32_t arbiter = bench.transport->GetArbiterEndpoint ();
            auto onDrop = [&] (const FabricQueueItem& item, uint32_t bytes)
            {
                dataDrops += item.header.payloadBytes > 0 ? 1 : 0;
                requestDrops += item.header.payloadBytes == 0 && item.header.dstHost == arbiter;
                otherDrops += item.header.payloadBytes == 0 && item.header.dstHost != arbiter;
            };
            Callback<void, const FabricQueueItem&, uint32_t> dropCb (onDrop);
            for (const Ptr<FabricNetDevice>& port : bench.topology->GetSwitchPorts ())
            {
                port->GetQueue ()->TraceConnectWithoutContext ("Drop", dropCb);
            }
            Ptr<UniformRandomVariable> u = CreateObject<UniformRandomVariable> ();
            std::map<uint32_t, uint64_t> bytesTo;
            for (uint32_t i = 0; i < m_nFlows; ++i)
            {
                const uint32_t dst = m_receivers[(i / m_senders.size ()) % m_receivers.size ()];
                const uint64_t size = u->GetInteger (1, 20000);
                bytesTo[dst] += size;
                packetsTo[dst] += (size + 1459) / 1460;
                bench.transport->AddFlow (
                    FlowSpec{i, static_cast<int64_t> (u->GetInteger (0, m_windowNs)),
                             m_senders[i % m_senders.size ()], dst, size});
            }
            Simulator::Run ();
            NS_TEST_ASSERT_MSG_EQ (bench.finish.size (), m_nFlows, "every flow finishes");
            NS_TEST_ASSERT_MSG_EQ (dataDrops, 0, "no data frame dropped");
            NS_TEST_ASSERT_MSG_EQ (requestDrops, 0, "no REQUEST dropped");
            NS_TEST_ASSERT_MSG_EQ (otherDrops, 0, "no other control frame dropped");
            NS_TEST_ASSERT_MSG_EQ (bench.topology->GetSwitchPortDrops (), 0, "no drop at all");
            const auto stats = bench.transport->GetStatistics ();
            std::map<std::string, std::string> st (stats.begin (), stats.end ());
            // Every flow's demand reached the arbiter, in far fewer frames than flows.
            NS_TEST_ASSERT_MSG_LT (std::stoull (st["fastpass.repeated_requests"]), m_nFlows / 5,
                                   "demand repeated per destination, not per flow");
            Time last (0);
            for (const auto& [flowId, at] : bench.finish)
            {
                last = std::max (last, at);
            }
            uint64_t mostPackets = 0;
            for (uint32_t r : m_receivers)
            {
                NS_TEST_ASSERT_MSG_EQ (delivered[r], bytesTo[r], "every byte once to " << r);
                mostPackets = std::max (mostPackets, packetsTo[r]);
            }
            // Maximal matchings keep a receiver with pending demand busy in every timeslot:
            // the busiest one finishes within its packets' timeslots + the window, the lead,
            // two batches and 20 us of request/delivery latency.
            const Time T = bench.transport->GetTimeslot ();
            const Time bound =
                NanoSeconds (m_windowNs) + MicroSeconds (20) +
                T * static_cast<int64_t> (mostPackets + bench.transport->GetLeadSlots () + 16);
            NS_TEST_ASSERT_MSG_LT_OR_EQ (last, bound, "receivers busy every timeslot");
            NS_TEST_ASSERT_MSG_GT_OR_EQ (last, T * static_cast<int64_t> (mostPackets),
                                         "no faster than line rate");
        }
        Simulator::Destroy ();
    }

    uint32_t m_nFlows;
    std::vector<uint32_t> m_senders;
    std::vector<uint32_t> m_receivers;
    double m_rateGbps;
    int64_t m_windowNs;
};

class AggregationCase : public TestCase
{
  public:
    explicit AggregationCase (bool perDestination)
          : TestCase (std::string ("100 flows from one host: ") +
                      (perDestination ? "FCP sends O(1) AREQ frames per batch"
                                      : "per-flow requests send one frame per flow"))
          , m_perDestination (perDestination)
    {
    }

  private:
    void DoRun () override
    {
        RngSeedManager::SetSeed (7);
        {
            Config::SetDefault ("ns3::FastpassFlowTransport::PerDestinationRequests",
                                BooleanValue (m_perDestination));
            Bench bench (3, 8, 2, 4, NanoSeconds (0));
            Config::SetDefault ("ns3::FastpassFlowTransport::PerDestinationRequests",
                                BooleanValue (true));
            const uint32_t arbiter = bench.transport->GetArbiterEndpoint ();
            const Time T = bench.transport->GetTimeslot ();
            const Time epoch = T * 8;
            // When host 0's request frames (REQUEST or AREQ) leave.
            std::vector<Time> sent;
            auto onTx = [&] (Ptr<const Packet> packet, const FabricHeader& frame)
            {
                if (frame.dstHost == arbiter)
                {
                    sent.push_back (Simulator::Now ());
                }
            };
            auto countIn = [&] (int64_t fromNs, Time length)
            {
                uint32_t n = 0;
                for (const Time& at : sent)
                {
                    n += at >= NanoSeconds (fromNs) && at < NanoSeconds (fromNs) + length ? 1 : 0;
                }
                return n;
            };
            Callback<void, Ptr<const Packet>, const FabricHeader&> txCb (onTx);
            bench.topology->GetHostDevice (0)->TraceConnectWithoutContext ("Tx", txCb);
            // Batch 1: 100 flows to 10 destinations (hosts 8..17), all at one instant.
            const int64_t first = epoch.GetNanoSeconds () + 1;
            for (uint32_t i = 0; i < 100; ++i)
            {
                bench.transport->AddFlow (FlowSpec{i, first, 0, 8 + i % 10, 10 * 1460});
            }
            // Batch 100: 100 flows to 20 destinations (hosts 1..20) at distinct times
            // within 7 timeslots.
            Ptr<UniformRandomVariable> u = CreateObject<UniformRandomVariable> ();
            const int64_t second = 100 * epoch.GetNanoSeconds ();
            for (uint32_t i = 0; i < 100; ++i)
            {
                bench.transport->AddFlow (
                    FlowSpec{100 + i, second + static_cast<int64_t> (u->GetInteger (0, 7 * 318)), 0,
                             1 + i % 20, 3 * 1460});
            }
            Simulator::Run ();
            NS_TEST_ASSERT_MSG_EQ (bench.finish.size (), 200, "every flow finishes");
            // Frames within a batch of the starts (retransmit timeouts come much later).
            const uint32_t atOnce = countIn (first, epoch);
            const uint32_t spread = countIn (second, epoch);
            const auto stats = bench.transport->GetStatistics ();
            std::map<std::string, std::string> st (stats.begin (), stats.end ());
            if (m_perDestination)
            {
                // One AREQ lists all 10 destinations (the cap is 10).
                NS_TEST_ASSERT_MSG_EQ (atOnce, 1, "one AREQ for 100 simultaneous flows");
                // Flows starting over a batch while the host sends data: at most one AREQ
                // per timeslot (RequestGap), each with the destinations that fit in the
                // guard gap, whatever the number of flows.
                NS_TEST_ASSERT_MSG_LT_OR_EQ (spread, 8, "at most B AREQs per batch");
                NS_TEST_ASSERT_MSG_GT_OR_EQ (spread, 2, "20 destinations need 2 AREQs");
                // Later AREQs (a destination's shortest flow allocated: the next one's size
                // for the min-FCT order; timeouts of starved destinations) still cover many
                // flows each: fewer frames in all than the 200 flows.
                NS_TEST_ASSERT_MSG_LT (sent.size (), 200, "fewer AREQs than flows");
            }
            else
            {
                NS_TEST_ASSERT_MSG_EQ (atOnce, 100, "one REQUEST per flow");
                NS_TEST_ASSERT_MSG_GT_OR_EQ (sent.size (), 200, "at least one REQUEST per flow");
            }
            NS_TEST_ASSERT_MSG_EQ (st["fastpass.retransmissions"], "0", "nothing lost");
            NS_TEST_ASSERT_MSG_EQ (bench.topology->GetSwitchPortDrops (), 0, "no drop");
        }
        Simulator::Destroy ();
    }

    bool m_perDestination;
};

class FastpassSuite : public TestSuite
{
  public:
    FastpassSuite ()
          : TestSuite ("disaggsim-fastpass", UNIT)
    {
        AddTestCase (new LoneFlowCase (true), TestCase::QUICK);
        AddTestCase (new LoneFlowCase (false), TestCase::QUICK);
        AddTestCase (new RandomLoadCase (2, 4, "FewestRemaining"), TestCase::QUICK);
        AddTestCase (new RandomLoadCase (4, 1, "FewestRemaining"), TestCase::QUICK);
        AddTestCase (new RandomLoadCase (2, 4, "LeastRecentlyAllocated"), TestCase::QUICK);
        AddTestCase (new PermutationCase, TestCase::QUICK);
        AddTestCase (new AggregationCase (true), TestCase::QUICK);
        AddTestCase (new AggregationCase (false), TestCase::QUICK);
        AddTestCase (new LossCase (true), TestCase::QUICK);
        AddTestCase (new LossCase (false), TestCase::QUICK);
        AddTestCase (new AllocLossCase (true), TestCase::QUICK);
        AddTestCase (new AllocLossCase (false), TestCase::QUICK);
        AddTestCase (new IncastCase (3000, {17, 40, 77, 130}, {3, 100}, 40, 1000000),
                     TestCase::QUICK);
        AddTestCase (new IncastCase (2000, {5, 60, 120}, {33}, 10, 100000), TestCase::QUICK);
    }
};

FastpassSuite g_fastpassSuite;

} // namespace
