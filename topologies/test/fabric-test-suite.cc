/*
 * disaggsim: tests of the fabric (switch tables, ECMP, queues, cut-through timing, ideal FCT).
 * Every expected value is derived by hand in the comment next to it.
 */
#include "topologies/helper/clos-helper.h"
#include "topologies/model/clos-topology.h"
#include "topologies/model/drop-tail-ecn-queue.h"
#include "topologies/model/fabric-header.h"
#include "topologies/model/four-ary-heap-scheduler.h"
#include "topologies/model/pooled-event.h"

#include "ns3/channel.h"
#include "ns3/core-module.h"
#include "ns3/test.h"

#include <algorithm>
#include <map>
#include <random>
#include <set>

using namespace ns3;

namespace
{

/// Set the delays of the authors' DDC simulator (NetSys/simulator coresim/queue.cpp with
/// ddc != 0: 10 ns host uplink + 210 ns ToR downlink = 110 ns each way, 400 ns ToR-spine;
/// no switching delay of its own): the "authors-sim" preset of disaggsim.sim.delays.
void
SetAuthorsSimDelays (Ptr<ClosTopology> topology)
{
    topology->SetAttribute ("HostLinkDelay", TimeValue (NanoSeconds (110)));
    topology->SetAttribute ("SpineLinkDelay", TimeValue (NanoSeconds (400)));
    topology->SetAttribute ("SwitchingDelay", TimeValue (Seconds (0)));
}

/// Build a Clos with default (paper) attributes except \p accessRate (and the authors'
/// simulator's delays if \p authorsSim).
Ptr<ClosTopology>
BuildClos (const std::string& accessRate, bool authorsSim = false)
{
    Ptr<ClosTopology> topology = CreateObject<ClosTopology> ();
    topology->SetAttribute ("AccessRate", DataRateValue (DataRate (accessRate)));
    if (authorsSim)
    {
        SetAuthorsSimDelays (topology);
    }
    topology->Build ();
    return topology;
}

/// Send one \p payloadBytes frame of flow hash 7 from host 0's \p device to host \p dst.
void
SendTestFrame (Ptr<FabricNetDevice> device, uint32_t dst, uint32_t payloadBytes)
{
    FabricHeader header;
    header.srcHost = 0;
    header.dstHost = static_cast<uint16_t> (dst);
    header.flowHash = 7;
    header.payloadBytes = payloadBytes;
    device->SendFabric (Create<Packet> (payloadBytes), header);
}

} // namespace

/// ToR and spine port tables of the default 9 x 16 x 4 Clos.
class PortTableTestCase : public TestCase
{
  public:
    PortTableTestCase ()
          : TestCase ("ToR: own-rack host port or the 4 spine uplinks; spine: the dst rack's port")
    {
    }

  private:
    void DoRun () override
    {
        Ptr<ClosTopology> clos = BuildClos ("40Gbps");
        NS_TEST_ASSERT_MSG_EQ (clos->GetNHosts (), 144u, "9 racks x 16 hosts");
        for (uint32_t rack = 0; rack < 9; ++rack)
        {
            Ptr<FabricSwitch> tor = clos->GetTor (rack);
            // 16 host ports + 4 uplinks.
            NS_TEST_ASSERT_MSG_EQ (tor->GetNPorts (), 20u, "ToR ports");
            for (uint32_t h = 0; h < 144; ++h)
            {
                const std::vector<uint32_t>& route = tor->GetRoute (h);
                if (h / 16 == rack)
                {
                    // Intra-rack: the host's own port, index h mod 16.
                    NS_TEST_ASSERT_MSG_EQ (route.size (), 1u, "one port to an own-rack host");
                    NS_TEST_ASSERT_MSG_EQ (route[0], h % 16, "own-rack host port");
                    // ... which is cabled to that very host.
                    Ptr<NetDevice> peer =
                        tor->GetPort (route[0])->GetChannel ()->GetDevice (0) ==
                                tor->GetPort (route[0])
                            ? tor->GetPort (route[0])->GetChannel ()->GetDevice (1)
                            : tor->GetPort (route[0])->GetChannel ()->GetDevice (0);
                    NS_TEST_ASSERT_MSG_EQ (peer, Ptr<NetDevice> (clos->GetHostDevice (h)),
                                           "port cabled to host");
                }
                else
                {
                    NS_TEST_ASSERT_MSG_EQ ((route == std::vector<uint32_t>{16, 17, 18, 19}), true,
                                           "other racks: ECMP over uplinks 16..19");
                }
            }
        }
        for (uint32_t s = 0; s < 4; ++s)
        {
            Ptr<FabricSwitch> spine = clos->GetSpine (s);
            NS_TEST_ASSERT_MSG_EQ (spine->GetNPorts (), 9u, "one port per rack");
            for (uint32_t h = 0; h < 144; ++h)
            {
                NS_TEST_ASSERT_MSG_EQ (spine->GetRoute (h).size (), 1u, "spine: single port");
                NS_TEST_ASSERT_MSG_EQ (spine->GetRoute (h)[0], h / 16, "spine: dst rack's port");
            }
        }
        // Rates: access 40 Gbps, uplinks 4 x 40 = 160 Gbps.
        NS_TEST_ASSERT_MSG_EQ (clos->GetHostDevice (0)->GetDataRate ().GetBitRate (),
                               40000000000ULL, "access rate");
        NS_TEST_ASSERT_MSG_EQ (clos->GetTor (0)->GetPort (16)->GetDataRate ().GetBitRate (),
                               160000000000ULL, "uplink rate");
        Simulator::Destroy ();
    }
};

/// Per-flow ECMP spreads flows evenly over the spines and keeps each flow on one path.
class EcmpTestCase : public TestCase
{
  public:
    EcmpTestCase ()
          : TestCase ("ECMP: 4000 flows hash onto all 4 uplinks, each within 1000 +- 100")
    {
    }

  private:
    void DoRun () override
    {
        Ptr<ClosTopology> clos = BuildClos ("40Gbps");
        Ptr<FabricSwitch> tor = clos->GetTor (0);
        std::map<uint32_t, uint32_t> perPort;
        for (uint32_t i = 0; i < 4000; ++i)
        {
            FabricHeader header;
            header.srcHost = static_cast<uint16_t> (i % 16);
            header.dstHost = static_cast<uint16_t> (16 + (i % 128));
            header.flowHash = FabricFlowHash (FabricHostIpv4Address (header.srcHost).Get (),
                                              FabricHostIpv4Address (header.dstHost).Get (), 6,
                                              static_cast<uint16_t> (49152 + i), 5000);
            uint32_t port = tor->SelectPort (header);
            NS_TEST_ASSERT_MSG_EQ (tor->SelectPort (header), port, "same flow, same path");
            ++perPort[port];
        }
        // 4000 flows over 4 ports: 1000 each; binomial sd = sqrt(4000 * 1/4 * 3/4) = 27.4,
        // so +-100 is a 3.6 sd band.
        NS_TEST_ASSERT_MSG_EQ (perPort.size (), 4u, "all four spines used");
        for (const auto& [port, count] : perPort)
        {
            NS_TEST_ASSERT_MSG_GT_OR_EQ (port, 16u, "uplink");
            NS_TEST_ASSERT_MSG_EQ_TOL (double (count), 1000.0, 100.0, "balanced ECMP");
        }
        Simulator::Destroy ();
    }
};

/// DropTailEcnQueue: byte limit and the DCTCP marking rule.
class DropTailEcnQueueTestCase : public TestCase
{
  public:
    DropTailEcnQueueTestCase ()
          : TestCase ("DropTailEcnQueue: 24 full frames fit 36 KB; CE above K only for ECT")
    {
    }

  private:
    void DoRun () override
    {
        Ptr<DropTailEcnQueue> queue = CreateObject<DropTailEcnQueue> ();
        queue->SetMaxBytes (36864);
        queue->SetAttribute ("MarkThresholdBytes", UintegerValue (3036));
        uint32_t accepted = 0;
        uint32_t marked = 0;
        for (uint32_t i = 0; i < 30; ++i)
        {
            FabricHeader header;
            header.ecn = (i % 2 == 0) ? FabricEcn::ECT0 : FabricEcn::NOT_ECT;
            // 1500 B IP packet + 18 B frame header = 1518 wire bytes.
            if (queue->Enqueue (FabricQueueItem{Create<Packet> (1500), header, Time (0)}))
            {
                ++accepted;
            }
        }
        // floor(36864 / 1518) = 24 frames (24 x 1518 = 36432; a 25th would need 37950).
        NS_TEST_ASSERT_MSG_EQ (accepted, 24u, "byte limit");
        NS_TEST_ASSERT_MSG_EQ (queue->GetNBytes (), 36432u, "occupancy");
        NS_TEST_ASSERT_MSG_EQ (queue->GetDroppedPackets (), 6u, "30 - 24 dropped");
        FabricQueueItem item;
        while (queue->Dequeue (item))
        {
            if (item.header.ecn == FabricEcn::CE)
            {
                ++marked;
            }
        }
        // Frame i arrives with 1518 * i bytes queued; it is marked if that exceeds K = 3036
        // (i >= 3) and it is ECT (even i): i in {4, 6, ..., 22} -> 10 marks.
        NS_TEST_ASSERT_MSG_EQ (marked, 10u, "marks: ECT frames arriving above K");
        NS_TEST_ASSERT_MSG_EQ (queue->GetMarkedPackets (), 10u, "mark counter");
        NS_TEST_ASSERT_MSG_EQ (queue->GetPeakBytes (), 36432u, "peak occupancy");
    }
};

/// The hand-computed ideal FCTs of the default topology.
class IdealFctTestCase : public TestCase
{
  public:
    IdealFctTestCase ()
          : TestCase ("IdealFct: 1460 B at 40 Gbps = 1691.3 ns inter-rack, 583.6 ns intra-rack")
    {
    }

  private:
    void DoRun () override
    {
        Ptr<ClosTopology> clos = CreateObject<ClosTopology> ();
        // One 1460 B segment + 40 B IPv4/TCP + 18 B frame = 1518 B = 12144 bits.
        // At 40 Gbps: 12144 / 40e9 s = 303.6 ns; at 160 Gbps (uplinks): 75.9 ns.
        // Inter-rack: 303.6 (serialization) + 2 x 20 + 2 x 200 (4 m and 40 m cables at
        // 5 ns/m) + 3 x 240 (switches) + (303.6 - 75.9) (the ToR holds the packet before
        // sending it 4x faster; the far ToR re-serializes it at 40 Gbps) = 1691.3 ns.
        NS_TEST_ASSERT_MSG_EQ (clos->IdealFct (0, 16, 1460, 40, 1460).GetPicoSeconds (),
                               int64_t (1691300), "inter-rack 1460 B");
        // Intra-rack: 303.6 + 2 x 20 + 240 = 583.6 ns.
        NS_TEST_ASSERT_MSG_EQ (clos->IdealFct (0, 1, 1460, 40, 1460).GetPicoSeconds (),
                               int64_t (583600), "intra-rack 1460 B");
        // 4096 B = 2 x 1460 + 1176: wire 1518 + 1518 + 1234 B = 4270 B -> 854 ns at 40 Gbps;
        // the largest packet's re-serialization is 303.6 - 75.9 = 227.7 ns.
        // Inter-rack: 854 + 440 + 720 + 227.7 = 2241.7 ns.
        NS_TEST_ASSERT_MSG_EQ (clos->IdealFct (5, 140, 4096, 40, 1460).GetPicoSeconds (),
                               int64_t (2241700), "inter-rack 4096 B");
        NS_TEST_ASSERT_MSG_EQ (clos->IdealFctNs (5, 140, 4096, 40, 1460), int64_t (2242), "in ns");
        // At 100 Gbps the same page: 4270 B -> 341.6 ns; re-serialization 121.44 - 30.36 =
        // 91.08 ns.  341.6 + 440 + 720 + 91.08 = 1592.68 ns.
        clos->SetAttribute ("AccessRate", DataRateValue (DataRate ("100Gbps")));
        NS_TEST_ASSERT_MSG_EQ (clos->IdealFct (5, 140, 4096, 40, 1460).GetPicoSeconds (),
                               int64_t (1592680), "inter-rack 4096 B at 100 Gbps");
        // The authors' simulator's delays (110 ns host links, 400 ns spine links, no
        // switching delay), same page at 100 Gbps: intra-rack 341.6 + 2 x 110 = 561.6 ns;
        // inter-rack 341.6 + 2 x 110 + 2 x 400 + 91.08 = 1452.68 ns.
        SetAuthorsSimDelays (clos);
        NS_TEST_ASSERT_MSG_EQ (clos->GetIntraRackDelay (), NanoSeconds (110), "host link");
        NS_TEST_ASSERT_MSG_EQ (clos->GetInterRackDelay (), NanoSeconds (400), "spine link");
        NS_TEST_ASSERT_MSG_EQ (clos->IdealFct (5, 6, 4096, 40, 1460).GetPicoSeconds (),
                               int64_t (561600), "authors-sim intra-rack 4096 B at 100 Gbps");
        NS_TEST_ASSERT_MSG_EQ (clos->IdealFct (5, 140, 4096, 40, 1460).GetPicoSeconds (),
                               int64_t (1452680), "authors-sim inter-rack 4096 B at 100 Gbps");
        // A negative delay falls back to the cable length: back to Table 4's 20 / 200 ns.
        clos->SetAttribute ("HostLinkDelay", TimeValue (NanoSeconds (-1)));
        clos->SetAttribute ("SpineLinkDelay", TimeValue (NanoSeconds (-1)));
        NS_TEST_ASSERT_MSG_EQ (clos->GetIntraRackDelay (), NanoSeconds (20), "4 m x 5 ns/m");
        NS_TEST_ASSERT_MSG_EQ (clos->GetInterRackDelay (), NanoSeconds (200), "40 m x 5 ns/m");
    }
};

/// Frames sent through the fabric arrive exactly when the closed form says.
class CutThroughTimingTestCase : public TestCase
{
  public:
    CutThroughTimingTestCase (const std::string& rate, uint32_t dst, bool authorsSim = false)
          : TestCase ("cut-through timing, " + rate + ", host 0 -> host " + std::to_string (dst) +
                      (authorsSim ? ", authors-sim delays" : ""))
          , m_rate (rate)
          , m_dst (dst)
          , m_authorsSim (authorsSim)
    {
    }

  private:
    void Received (Ptr<FabricNetDevice> device, Ptr<Packet> packet, const FabricHeader& header,
                   Time txTime)
    {
        m_arrivals.push_back (Simulator::Now ());
    }

    void DoRun () override
    {
        Ptr<ClosTopology> clos = BuildClos (m_rate, m_authorsSim);
        clos->GetHostDevice (m_dst)->SetFabricReceiveCallback (
            MakeCallback (&CutThroughTimingTestCase::Received, this));
        // Three frames: 1500 B, 1500 B, 200 B (+18 B each), sent back to back at t = 0.
        const std::vector<uint32_t> sizes = {1500, 1500, 200};
        for (uint32_t size : sizes)
        {
            SendTestFrame (clos->GetHostDevice (0), m_dst, size);
        }
        Simulator::Run ();
        NS_TEST_ASSERT_MSG_EQ (m_arrivals.size (), 3u, "all frames arrive");
        // Closed form (clos.md): frame k's tail reaches the host at
        // S_k + T_R(b_k) + props + switches + [inter-rack] max_{j<=k} (T_R(b_j) - T_4R(b_j)),
        // with S_k the sum of the earlier frames' T_R.
        const double bitsPerNs = DataRate (m_rate).GetBitRate () / 1e9;
        const bool interRack = m_dst / 16 != 0;
        double sentNs = 0;
        double maxReserializationNs = 0;
        for (std::size_t k = 0; k < sizes.size (); ++k)
        {
            double txNs = (sizes[k] + 18) * 8 / bitsPerNs;
            maxReserializationNs = std::max (maxReserializationNs, txNs - txNs / 4);
            // Table 4: 2 x 20 ns host cables, 2 x 200 ns spine cables, 240 ns per switch.
            // Authors' simulator: 2 x 110 ns host links, 2 x 400 ns spine links, no switching.
            double fixedNs = m_authorsSim
                                 ? (interRack ? 220 + 800 + maxReserializationNs : 220)
                                 : (interRack ? 440 + 720 + maxReserializationNs : 40 + 240);
            double expectedNs = sentNs + txNs + fixedNs;
            NS_TEST_ASSERT_MSG_EQ_TOL (m_arrivals[k].GetPicoSeconds () / 1000.0, expectedNs, 0.001,
                                       "arrival of frame " << k);
            sentNs += txNs;
        }
        // The last arrival is the ideal FCT of a 3200 B flow cut as 1500 + 1500 + 200 payload
        // with no extra header.
        NS_TEST_ASSERT_MSG_EQ (m_arrivals.back (), clos->IdealFct (0, m_dst, 3200, 0, 1500),
                               "IdealFct equals the model");
        Simulator::Destroy ();
    }

    std::string m_rate;
    uint32_t m_dst;
    bool m_authorsSim;
    std::vector<Time> m_arrivals;
};

/**
 * SendOverhead (Floyd & Jacobson 1992's random source processing time): a host frame sent
 * into an idle port starts U[0, J] later; frames sent back to back stay in order and back to
 * back; switch ports add nothing.
 */
class SendOverheadTestCase : public TestCase
{
  public:
    SendOverheadTestCase ()
          : TestCase ("host SendOverhead J: idle-port frames start U[0, J] late, mean half J, "
                      "FIFO kept")
    {
    }

  private:
    void Received (Ptr<FabricNetDevice> device, Ptr<Packet> packet, const FabricHeader& header,
                   Time txTime)
    {
        m_arrivals.push_back (Simulator::Now ());
    }

    void DoRun () override
    {
        Ptr<ClosTopology> clos = BuildClos ("40Gbps");
        // J = one 1518 B frame at 40 Gbps = 1518 x 8 / 40 Gbps = 303.6 ns.
        const Time overhead = PicoSeconds (303600);
        Ptr<FabricNetDevice> source = clos->GetHostDevice (0);
        source->SetAttribute ("SendOverhead", TimeValue (overhead));
        clos->GetHostDevice (1)->SetFabricReceiveCallback (
            MakeCallback (&SendOverheadTestCase::Received, this));
        // 400 single 1500 B frames, 10 us apart (the port is idle at each send), to host 1 in
        // the same rack; then a burst of 3 frames at 10 ms.
        const uint32_t n = 400;
        for (uint32_t i = 0; i < n; ++i)
        {
            Simulator::Schedule (MicroSeconds (10) * int64_t (i), &SendTestFrame, source, 1u,
                                 1500u);
        }
        for (uint32_t k = 0; k < 3; ++k)
        {
            Simulator::Schedule (MilliSeconds (10), &SendTestFrame, source, 1u, 1500u);
        }
        Simulator::Run ();
        NS_TEST_ASSERT_MSG_EQ (m_arrivals.size (), n + 3, "all frames arrive");
        // Intra-rack, no overhead: tail arrival = send + T(1518 B) + 2 x 20 ns + 240 ns =
        // send + 303.6 + 40 + 240 = send + 583.6 ns (clos.md, Timing).
        const Time path = PicoSeconds (583600);
        double sumNs = 0;
        Time minDelay = Seconds (1);
        Time maxDelay = Seconds (-1);
        for (uint32_t i = 0; i < n; ++i)
        {
            Time delay = m_arrivals[i] - MicroSeconds (10) * int64_t (i) - path;
            minDelay = std::min (minDelay, delay);
            maxDelay = std::max (maxDelay, delay);
            sumNs += delay.GetPicoSeconds () / 1000.0;
        }
        NS_TEST_ASSERT_MSG_GT_OR_EQ (minDelay, Time (0), "never early");
        NS_TEST_ASSERT_MSG_LT_OR_EQ (maxDelay, overhead, "at most J late");
        // U[0, 303.6 ns]: mean 151.8 ns, standard deviation 303.6 / sqrt(12) = 87.6 ns, so the
        // mean of 400 draws has standard error 4.4 ns; 5 standard errors = 22 ns.
        NS_TEST_ASSERT_MSG_EQ_TOL (sumNs / n, 151.8, 22.0, "mean extra delay J/2");
        // Spread: with 400 draws the extremes lie within 5% of J of the interval's ends
        // (P(no draw in a 5% end) = 0.95^400 ~ 1e-9).
        NS_TEST_ASSERT_MSG_LT (minDelay, PicoSeconds (15180), "draws reach near 0");
        NS_TEST_ASSERT_MSG_GT (maxDelay, PicoSeconds (288420), "draws reach near J");
        // The burst: only the first frame waits for its draw; the others follow back to back
        // (FIFO, each T = 303.6 ns after the previous one).
        for (uint32_t k = 1; k < 3; ++k)
        {
            NS_TEST_ASSERT_MSG_EQ (m_arrivals[n + k] - m_arrivals[n + k - 1], PicoSeconds (303600),
                                   "burst frame " << k << " back to back");
        }
        Simulator::Destroy ();
    }

    std::vector<Time> m_arrivals;
};

/**
 * FourAryHeapScheduler against an independent oracle, a std::set of (timestamp, uid) keys
 * (ns-3's event order): 20,000 random Inserts (many equal timestamps, so the uid decides),
 * RemoveNexts and Removes of arbitrary pending events; every RemoveNext and PeekNext must
 * return the oracle's smallest key with its impl and context.
 */
class FourAryHeapSchedulerTestCase : public TestCase
{
  public:
    /// \param lanes the DelayLanes attribute: 64 (default; every delay of the test gets a
    /// lane), 8 (lanes and stray heap events mixed), 0 (a plain heap).
    explicit FourAryHeapSchedulerTestCase (uint32_t lanes)
          : TestCase ("4-ary heap scheduler returns events in (timestamp, uid) order, " +
                      std::to_string (lanes) + " delay lanes")
          , m_lanes (lanes)
    {
    }

  private:
    void DoRun () override
    {
        Ptr<FourAryHeapScheduler> heap = CreateObject<FourAryHeapScheduler> ();
        heap->SetAttribute ("DelayLanes", UintegerValue (m_lanes));
        std::size_t peakBacklog = 0;
        std::set<std::pair<uint64_t, uint32_t>> oracle;
        std::mt19937_64 rng (7);
        uint32_t uid = 0;
        uint64_t now = 0;
        uint64_t older = 0;
        const auto eventOf = [] (uint64_t ts, uint32_t id)
        {
            Scheduler::Event ev;
            // The scheduler only stores impl: a fake, never dereferenced, pointer that
            // encodes the uid checks that the right payload travels with each key.
            ev.impl = reinterpret_cast<EventImpl*> (static_cast<uintptr_t> (id) * 16 + 16);
            ev.key.m_ts = ts;
            ev.key.m_uid = id;
            ev.key.m_context = id ^ 0x5A5A;
            return ev;
        };
        uint64_t removed = 0;
        for (int step = 0; step < 20000; ++step)
        {
            const uint64_t r = rng () % 10;
            if (r < 5 || oracle.empty ())
            {
                // Frequent ties; one insert in four counts from an older time, so that a
                // lane's next key may be below its tail and must go to the heap instead.
                const uint64_t base = rng () % 4 == 0 ? older : now;
                const uint64_t ts = base + rng () % 50;
                heap->Insert (eventOf (ts, uid));
                oracle.emplace (ts, uid++);
            }
            else if (r < 9)
            {
                const Scheduler::Event peek = heap->PeekNext ();
                const Scheduler::Event next = heap->RemoveNext ();
                const auto want = *oracle.begin ();
                oracle.erase (oracle.begin ());
                NS_TEST_ASSERT_MSG_EQ (peek.key.m_uid, next.key.m_uid, "PeekNext = RemoveNext");
                NS_TEST_ASSERT_MSG_EQ (next.key.m_ts, want.first, "timestamp order");
                NS_TEST_ASSERT_MSG_EQ (next.key.m_uid, want.second, "uid order among ties");
                NS_TEST_ASSERT_MSG_EQ (next.key.m_context, (want.second ^ 0x5A5Au), "context");
                NS_TEST_ASSERT_MSG_EQ (next.impl, eventOf (0, want.second).impl, "impl");
                if (step % 7 == 0)
                {
                    older = now;
                }
                now = next.key.m_ts;
            }
            else
            {
                auto it = oracle.begin ();
                std::advance (it, static_cast<long> (rng () % oracle.size ()));
                heap->Remove (eventOf (it->first, it->second));
                oracle.erase (it);
                ++removed;
            }
            NS_TEST_ASSERT_MSG_EQ (heap->IsEmpty (), oracle.empty (), "IsEmpty");
            peakBacklog = std::max (peakBacklog, heap->GetLaneBacklog ());
        }
        NS_TEST_ASSERT_MSG_GT (removed, 1000u, "Remove exercised");
        if (m_lanes == 0)
        {
            NS_TEST_ASSERT_MSG_EQ (peakBacklog, 0u, "no lanes: every event in the heap");
        }
        else
        {
            // Lanes held events behind their heads (so Remove hit lane members too).
            NS_TEST_ASSERT_MSG_GT (peakBacklog, 10u, "lanes exercised");
        }
        while (!oracle.empty ())
        {
            const Scheduler::Event next = heap->RemoveNext ();
            NS_TEST_ASSERT_MSG_EQ (next.key.m_uid, oracle.begin ()->second, "drain order");
            oracle.erase (oracle.begin ());
        }
        NS_TEST_ASSERT_MSG_EQ (heap->IsEmpty (), true, "drained");
    }

    uint32_t m_lanes;
};

/**
 * EventBlockPool and PooledEventImpl: blocks are distinct and aligned across chunk
 * boundaries, a freed block is reused (LIFO), and an event deleted through EventImpl's
 * virtual destructor (as ns-3 deletes a finished event) returns its block to the pool.
 */
class PooledEventTestCase : public TestCase
{
  public:
    PooledEventTestCase ()
          : TestCase ("pooled events: distinct aligned blocks, reused after ns-3 frees them")
    {
    }

  private:
    class CountingEvent final : public PooledEventImpl<CountingEvent>
    {
      public:
        explicit CountingEvent (int* runs)
              : m_runs (runs)
        {
        }

      private:
        void Notify () override
        {
            ++*m_runs;
        }

        int* m_runs;
        char m_pad[40]; // a size no other pooled event in the library has
    };

    void DoRun () override
    {
        using Pool = EventBlockPool<72>;
        std::set<void*> blocks;
        std::vector<void*> order;
        for (int i = 0; i < 600; ++i) // more than two 256-block chunks
        {
            void* block = Pool::Allocate ();
            NS_TEST_ASSERT_MSG_EQ (reinterpret_cast<uintptr_t> (block) % alignof (std::max_align_t),
                                   0u, "aligned");
            blocks.insert (block);
            order.push_back (block);
        }
        NS_TEST_ASSERT_MSG_EQ (blocks.size (), 600u, "600 distinct blocks");
        Pool::Release (order[10]);
        Pool::Release (order[20]);
        NS_TEST_ASSERT_MSG_EQ (Pool::Allocate (), order[20], "the last freed block first");
        NS_TEST_ASSERT_MSG_EQ (Pool::Allocate (), order[10], "then the one before");

        int runs = 0;
        CountingEvent* event = new CountingEvent (&runs);
        void* address = event;
        Simulator::Schedule (NanoSeconds (5), Ptr<EventImpl> (event, false));
        Simulator::Run ();
        NS_TEST_ASSERT_MSG_EQ (runs, 1, "the pooled event ran");
        // ns-3 freed it through EventImpl's virtual destructor: its block is the next one.
        NS_TEST_ASSERT_MSG_EQ (EventBlockPool<sizeof (CountingEvent)>::Allocate (), address,
                               "freed by ns-3: back in the pool");
        Simulator::Destroy ();
    }
};

class FabricTestSuite : public TestSuite
{
  public:
    FabricTestSuite ()
          : TestSuite ("disaggsim-fabric", UNIT)
    {
        AddTestCase (new PortTableTestCase, TestCase::QUICK);
        AddTestCase (new EcmpTestCase, TestCase::QUICK);
        AddTestCase (new DropTailEcnQueueTestCase, TestCase::QUICK);
        AddTestCase (new IdealFctTestCase, TestCase::QUICK);
        for (const char* rate : {"40Gbps", "100Gbps"})
        {
            AddTestCase (new CutThroughTimingTestCase (rate, 1), TestCase::QUICK);
            AddTestCase (new CutThroughTimingTestCase (rate, 100), TestCase::QUICK);
            AddTestCase (new CutThroughTimingTestCase (rate, 1, true), TestCase::QUICK);
            AddTestCase (new CutThroughTimingTestCase (rate, 100, true), TestCase::QUICK);
        }
        AddTestCase (new SendOverheadTestCase, TestCase::QUICK);
        AddTestCase (new PooledEventTestCase, TestCase::QUICK);
        for (uint32_t lanes : {64u, 8u, 0u})
        {
            AddTestCase (new FourAryHeapSchedulerTestCase (lanes), TestCase::QUICK);
        }
    }
};

static FabricTestSuite g_fabricTestSuite;
