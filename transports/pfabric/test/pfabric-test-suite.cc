/*
 * disaggsim: pFabric tests with exact expected values (transports/pfabric/doc/pfabric.md).
 *
 * Fabric of the end-to-end cases: ClosTopology with 2 racks x 4 hosts, 2 spines, 40 Gbps
 * access links (4x faster uplinks), 36 KB switch ports; its IdealFct() is the FCT of a flow
 * alone on its path in this model, so a lone pFabric flow must finish exactly then.
 */
#include "transports/pfabric/helper/pfabric-helper.h"
#include "transports/pfabric/model/pfabric-header.h"
#include "transports/pfabric/model/pfabric-queue.h"

#include "ns3/boolean.h"
#include "ns3/callback.h"
#include "ns3/config.h"
#include "ns3/data-rate.h"
#include "ns3/double.h"
#include "ns3/nstime.h"
#include "ns3/packet.h"
#include "ns3/simulator.h"
#include "ns3/test.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

using namespace ns3;

namespace
{

constexpr uint32_t kMss = 1460;
constexpr uint32_t kFullFrameBytes = kMss + kPfabricHeaderBytes + kFabricHeaderBytes; // 1500

/// A pFabric port that drops, once, the data frame of flow 0 at byte offset DropSeq (test
/// instrument for loss recovery; every other rule is PfabricQueue's).
class TailDropQueue : public PfabricQueue
{
  public:
    static TypeId GetTypeId ()
    {
        static TypeId tid =
            TypeId ("ns3::PfabricTestTailDropQueue")
                .SetParent<PfabricQueue> ()
                .AddConstructor<TailDropQueue> ()
                .AddAttribute ("DropSeq", "Byte offset of the data frame to drop once",
                               UintegerValue (0), MakeUintegerAccessor (&TailDropQueue::m_dropSeq),
                               MakeUintegerChecker<uint32_t> ());
        return tid;
    }

    static uint32_t s_dropped;

  protected:
    bool DoEnqueue (FabricQueueItem&& item) override
    {
        if (!m_done && item.header.payloadBytes > 0)
        {
            if ((item.header.transportFlags & PFABRIC_DATA) && item.header.seq == m_dropSeq)
            {
                m_done = true;
                ++s_dropped;
                return false;
            }
        }
        return PfabricQueue::DoEnqueue (std::move (item));
    }

  private:
    uint32_t m_dropSeq{0};
    bool m_done{false};
};

uint32_t TailDropQueue::s_dropped = 0;
NS_OBJECT_ENSURE_REGISTERED (TailDropQueue);

/// Builds the small fabric with pFabric on it and records FlowFinished times.
struct Fabric
{
    Ptr<ClosTopology> topology;
    Ptr<PfabricFlowTransport> transport;
    std::map<uint64_t, Time> finish;

    explicit Fabric (const std::string& switchQueueType = "", const std::string& rate = "40Gbps")
    {
        topology = CreateObject<ClosTopology> ();
        topology->SetAttribute ("Racks", UintegerValue (2));
        topology->SetAttribute ("HostsPerRack", UintegerValue (4));
        topology->SetAttribute ("Spines", UintegerValue (2));
        topology->SetAttribute ("AccessRate", DataRateValue (DataRate (rate)));
        transport = CreateObject<PfabricFlowTransport> ();
        transport->ConfigureFabric (topology);
        if (!switchQueueType.empty ())
        {
            ObjectFactory factory;
            factory.SetTypeId (switchQueueType);
            topology->SetSwitchQueue (factory);
        }
        topology->Build ();
        transport->Install (topology);
        transport->TraceConnectWithoutContext ("FlowFinished",
                                               MakeCallback (&Fabric::OnFinished, this));
    }

    void OnFinished (uint64_t flowId, Time at)
    {
        finish[flowId] = at;
    }

    void Add (uint64_t id, uint32_t src, uint32_t dst, uint64_t bytes, int64_t startNs = 0)
    {
        transport->AddFlow (FlowSpec{id, startNs, src, dst, bytes});
    }

    Time Ideal (uint32_t src, uint32_t dst, uint64_t bytes) const
    {
        return topology->IdealFct (src, dst, bytes, kPfabricHeaderBytes, kMss);
    }

    /// Serialization time of a full data frame at the 40 Gbps access rate.
    Time FrameTime () const
    {
        return FabricNetDevice::TxTimeFor (kFullFrameBytes, 40000000000ULL);
    }
};

/// Makes a frame of \p wireBytes with priority \p rank from host \p src of flow \p flow.
FabricQueueItem
Frame (uint32_t wireBytes, uint32_t rank, uint64_t flow, uint16_t src = 0)
{
    FabricQueueItem item;
    item.packet = Create<Packet> (wireBytes - kFabricHeaderBytes);
    item.wireBytes = wireBytes;
    item.header.srcHost = src;
    item.header.rank = rank;
    item.header.flowHash = PfabricFlowHash (flow, 0, false);
    item.header.payloadBytes = 1;
    return item;
}

} // namespace

/// What a lone 3,000 B flow (1460 + 1460 + 80 B) puts on the wire, seen at both hosts'
/// ports: each data frame's Packet is its payload + the 22 B pFabric header (40 B of
/// headers with the frame's 18 B, YAPS's hdr_size), and its transport fields carry flow id,
/// byte offset, DATA and the remaining bytes as rank; each ACK is a 22 B Packet with the
/// cumulative ACK, the offset it answers, ACK and rank 0.
class PfabricWireFramesTest : public TestCase
{
  public:
    PfabricWireFramesTest ()
          : TestCase ("pFabric frames: 22 B header in the Packet, fields in the frame (40 B "
                      "with the frame header)")
    {
    }

  private:
    struct Seen
    {
        uint32_t packetBytes;
        FabricHeader frame;
    };

    void OnRx (std::vector<Seen>* seen, Ptr<const Packet> packet, const FabricHeader& frame)
    {
        seen->push_back (Seen{packet->GetSize (), frame});
    }

    void DoRun () override
    {
        NS_TEST_ASSERT_MSG_EQ (kPfabricHeaderBytes + kFabricHeaderBytes, 40u, "YAPS hdr_size");
        const uint64_t flowId = (uint64_t (1) << 40) + 7; // beyond 32 bits
        Fabric fabric;
        std::vector<Seen> atReceiver;
        std::vector<Seen> atSender;
        fabric.topology->GetHostDevice (5)->TraceConnectWithoutContext (
            "Rx", MakeCallback (&PfabricWireFramesTest::OnRx, this).Bind (&atReceiver));
        fabric.topology->GetHostDevice (0)->TraceConnectWithoutContext (
            "Rx", MakeCallback (&PfabricWireFramesTest::OnRx, this).Bind (&atSender));
        fabric.Add (flowId, 0, 5, 3000);
        Simulator::Run ();
        Simulator::Destroy ();
        NS_TEST_ASSERT_MSG_EQ (fabric.finish.count (flowId), 1u, "flow finished");

        // Data: all three leave at once (initial window 12); priority = unacknowledged bytes.
        const uint32_t payload[] = {1460, 1460, 80};
        NS_TEST_ASSERT_MSG_EQ (atReceiver.size (), 3u, "three data frames");
        for (uint32_t i = 0; i < 3 && i < atReceiver.size (); ++i)
        {
            const Seen& d = atReceiver[i];
            NS_TEST_ASSERT_MSG_EQ (d.packetBytes, payload[i] + 22, "data packet " << i);
            NS_TEST_ASSERT_MSG_EQ (d.frame.payloadBytes, payload[i], "payload " << i);
            NS_TEST_ASSERT_MSG_EQ (uint32_t (d.frame.transportFlags), uint32_t (PFABRIC_DATA),
                                   "DATA " << i);
            NS_TEST_ASSERT_MSG_EQ (d.frame.flowId, flowId, "flow id " << i);
            NS_TEST_ASSERT_MSG_EQ (d.frame.seq, 1460 * i, "offset " << i);
            NS_TEST_ASSERT_MSG_EQ (d.frame.rank, 3000u, "nothing acknowledged yet " << i);
            NS_TEST_ASSERT_MSG_EQ (d.frame.srcHost, 0, "src");
            NS_TEST_ASSERT_MSG_EQ (d.frame.dstHost, 5, "dst");
            // PacketSpraying (default true): packet i's ECMP hash varies with i.
            NS_TEST_ASSERT_MSG_EQ (d.frame.flowHash, PfabricFlowHash (flowId, i, true),
                                   "sprayed hash " << i);
        }
        // ACKs, one per data packet, in order: cumulative ACK and the answered offset.
        const uint32_t ackSeq[] = {1460, 2920, 3000};
        NS_TEST_ASSERT_MSG_EQ (atSender.size (), 3u, "three ACKs");
        for (uint32_t i = 0; i < 3 && i < atSender.size (); ++i)
        {
            const Seen& a = atSender[i];
            NS_TEST_ASSERT_MSG_EQ (a.packetBytes, 22u, "ACK packet " << i);
            NS_TEST_ASSERT_MSG_EQ (a.frame.payloadBytes, 0u, "ACK payload " << i);
            NS_TEST_ASSERT_MSG_EQ (uint32_t (a.frame.transportFlags), uint32_t (PFABRIC_ACK),
                                   "ACK " << i);
            NS_TEST_ASSERT_MSG_EQ (a.frame.flowId, flowId, "ACK flow id " << i);
            NS_TEST_ASSERT_MSG_EQ (a.frame.seq, ackSeq[i], "cumulative ACK " << i);
            NS_TEST_ASSERT_MSG_EQ (a.frame.sackSeq, 1460 * i, "answered offset " << i);
            NS_TEST_ASSERT_MSG_EQ (a.frame.rank, 0u, "ACK rank");
        }
    }
};

/// Attributes set before the transport is configured reach every flow's sender, which is a
/// copy of the transport's prototype: with PacketSpraying false all of a flow's data frames
/// carry the per-flow hash (low spray bits 0); with the default each packet's differs.
class PfabricSenderAttributesTest : public TestCase
{
  public:
    PfabricSenderAttributesTest ()
          : TestCase ("pFabric: attribute defaults reach each flow's sender (PacketSpraying)")
    {
    }

  private:
    static void OnRx (std::vector<uint32_t>* hashes, Ptr<const Packet>, const FabricHeader& frame)
    {
        hashes->push_back (frame.flowHash);
    }

    std::vector<uint32_t> RunFlow ()
    {
        Fabric fabric;
        std::vector<uint32_t> hashes;
        fabric.topology->GetHostDevice (5)->TraceConnectWithoutContext (
            "Rx", MakeBoundCallback (&PfabricSenderAttributesTest::OnRx, &hashes));
        fabric.Add (9, 0, 5, 4 * 1460);
        Simulator::Run ();
        Simulator::Destroy ();
        return hashes;
    }

    void DoRun () override
    {
        std::vector<uint32_t> sprayed = RunFlow ();
        Config::SetDefault ("ns3::PfabricSender::PacketSpraying", BooleanValue (false));
        std::vector<uint32_t> pinned = RunFlow ();
        Config::SetDefault ("ns3::PfabricSender::PacketSpraying", BooleanValue (true));
        NS_TEST_ASSERT_MSG_EQ (sprayed.size (), 4u, "four data frames (sprayed)");
        NS_TEST_ASSERT_MSG_EQ (pinned.size (), 4u, "four data frames (pinned)");
        for (uint32_t i = 0; i < 4 && i < sprayed.size () && i < pinned.size (); ++i)
        {
            NS_TEST_ASSERT_MSG_EQ (sprayed[i], PfabricFlowHash (9, i, true), "sprayed " << i);
            NS_TEST_ASSERT_MSG_EQ (pinned[i], PfabricFlowHash (9, 0, false), "pinned " << i);
        }
    }
};

/// After a dequeue, an arrival at a full port is weighed against, and evicts, the least
/// urgent frame (the last of the highest ranks) of what is left: the same frame as before
/// when the most urgent one left from in front of it, not whatever now sits at its old
/// position; the next least urgent one when the frame that left was it.
class PfabricQueueWorstAfterDequeueTest : public TestCase
{
  public:
    PfabricQueueWorstAfterDequeueTest ()
          : TestCase ("PfabricQueue: the least urgent frame is still known after a dequeue")
    {
    }

  private:
    /// A port with room for \p frames full-size frames; the flow of every frame it drops,
    /// refused or evicted, is appended to \p droppedFlows.
    static Ptr<PfabricQueue> FullFramesQueue (uint32_t frames, std::vector<uint32_t>* droppedFlows)
    {
        Ptr<PfabricQueue> q = CreateObject<PfabricQueue> ();
        q->SetMaxBytes (frames * 1500);
        q->TraceConnectWithoutContext (
            "Drop", MakeBoundCallback (
                        +[] (std::vector<uint32_t>* out, const FabricQueueItem& item, uint32_t)
                        { out->push_back (PfabricFlowKey (item.header.flowHash)); },
                        droppedFlows));
        return q;
    }

    /// One case: a full port of `buffered` (rank, flow) frames; an arrival of rank
    /// `tieRank` (flow 90) ties the least urgent and is refused; one dequeue takes the frame
    /// of rank `leavingRank`; a frame of rank `refillRank` (flow 91) fills the port again;
    /// then an arrival of rank `arrivalRank` (flow 92) must evict flow `evictedFlow`.
    struct Case
    {
        std::vector<std::pair<uint32_t, uint64_t>> buffered;
        uint32_t tieRank;
        uint32_t leavingRank;
        uint32_t refillRank;
        uint32_t arrivalRank;
        uint32_t evictedFlow;
    };

    void DoRun () override
    {
        const Case cases[] = {
            // The most urgent frame (3) leaves from in front of the least urgent, flow 4's 9
            // (the later of the two 9s): that frame must still be the one evicted.
            {{{3, 1}, {9, 2}, {5, 3}, {9, 4}, {4, 5}}, 9, 3, 8, 7, 4},
            // Flow 1's rank-1 frame is the most urgent, so flow 1's earliest frame goes first
            // (starvation prevention): its rank 9, the least urgent itself.  The next least
            // urgent, flow 3's 6, must be the one evicted.
            {{{9, 1}, {2, 2}, {6, 3}, {1, 1}}, 9, 9, 3, 4, 3},
        };
        for (const Case& c : cases)
        {
            Ptr<PfabricQueue> q = CreateObject<PfabricQueue> ();
            q->SetMaxBytes (static_cast<uint32_t> (c.buffered.size ()) * 1500);
            std::vector<uint32_t> dropped;
            q->TraceConnectWithoutContext (
                "Drop", MakeBoundCallback (
                            +[] (std::vector<uint32_t>* out, const FabricQueueItem& item, uint32_t)
                            { out->push_back (PfabricFlowKey (item.header.flowHash)); },
                            &dropped));
            for (const auto& [rank, flow] : c.buffered)
            {
                NS_TEST_ASSERT_MSG_EQ (q->Enqueue (Frame (1500, rank, flow)), true, "fits");
            }
            NS_TEST_ASSERT_MSG_EQ (q->Enqueue (Frame (1500, c.tieRank, 90)), false,
                                   "a tie with the least urgent is refused");
            FabricQueueItem item;
            NS_TEST_ASSERT_MSG_EQ (q->Dequeue (item), true, "a frame left");
            NS_TEST_ASSERT_MSG_EQ (item.header.rank, c.leavingRank, "the frame that left");
            NS_TEST_ASSERT_MSG_EQ (q->Enqueue (Frame (1500, c.refillRank, 91)), true,
                                   "room for one");
            NS_TEST_ASSERT_MSG_EQ (q->Enqueue (Frame (1500, c.arrivalRank, 92)), true,
                                   "the arrival beats the least urgent buffered frame");
            NS_TEST_ASSERT_MSG_EQ (dropped.size (), 2u, "the refused tie, then one eviction");
            if (dropped.size () == 2)
            {
                NS_TEST_ASSERT_MSG_EQ (dropped[0], 90u, "the refused tie");
                NS_TEST_ASSERT_MSG_EQ (dropped[1], c.evictedFlow, "the evicted frame's flow");
            }
            // What is left leaves in rank order.
            uint32_t last = 0;
            uint32_t left = 0;
            while (q->Dequeue (item))
            {
                NS_TEST_ASSERT_MSG_EQ ((item.header.rank >= last), true, "rank order");
                last = item.header.rank;
                ++left;
            }
            NS_TEST_ASSERT_MSG_EQ (left, c.buffered.size (), "all but the evicted frame left");
        }
    }
};

/// The port's two rules (SIGCOMM'13 §4.2) on hand-made frames.
class PfabricQueueRulesTest : public TestCase
{
  public:
    PfabricQueueRulesTest ()
          : TestCase ("PfabricQueue: priority dropping, starvation prevention, cut-through "
                      "eligibility")
    {
    }

  private:
    void DoRun () override
    {
        // Buffer of 3 full frames (4500 B).
        Ptr<PfabricQueue> q = CreateObject<PfabricQueue> ();
        q->SetMaxBytes (3 * 1500);
        // Every drop, arriving or evicted, is reported by the base Drop trace (rank and the
        // occupancy before the drop); evictions never pass through the Dequeue trace.
        std::vector<std::pair<uint32_t, uint32_t>> drops;
        uint32_t dequeues = 0;
        q->TraceConnectWithoutContext (
            "Drop",
            MakeBoundCallback (
                +[] (std::vector<std::pair<uint32_t, uint32_t>>* out, const FabricQueueItem& item,
                     uint32_t bytesBefore) { out->emplace_back (item.header.rank, bytesBefore); },
                &drops));
        q->TraceConnectWithoutContext (
            "Dequeue",
            MakeBoundCallback (
                +[] (uint32_t* n, const FabricQueueItem&, uint32_t) { ++*n; }, &dequeues));
        NS_TEST_ASSERT_MSG_EQ (q->Enqueue (Frame (1500, 50, 1)), true, "fits");
        NS_TEST_ASSERT_MSG_EQ (q->Enqueue (Frame (1500, 10, 2)), true, "fits");
        NS_TEST_ASSERT_MSG_EQ (q->Enqueue (Frame (1500, 30, 3)), true, "fits");
        // Full.  Rank 20 < worst buffered 50: the rank-50 frame is evicted.
        NS_TEST_ASSERT_MSG_EQ (q->Enqueue (Frame (1500, 20, 4)), true, "evicts 50");
        NS_TEST_ASSERT_MSG_EQ (q->GetDroppedPackets (), 1u, "one eviction");
        NS_TEST_ASSERT_MSG_EQ (drops.size (), 1u, "eviction traced as a drop");
        NS_TEST_ASSERT_MSG_EQ (drops[0].first, 50u, "the rank-50 frame was dropped");
        NS_TEST_ASSERT_MSG_EQ (drops[0].second, 4500u, "occupancy before the eviction");
        NS_TEST_ASSERT_MSG_EQ (dequeues, 0u, "an eviction is not a dequeue");
        NS_TEST_ASSERT_MSG_EQ (q->GetNBytes (), 4500u, "byte accounting after eviction");
        NS_TEST_ASSERT_MSG_EQ (q->GetNPackets (), 3u, "packet accounting after eviction");
        // Rank 40 > worst buffered 30: the arriving frame is dropped.
        NS_TEST_ASSERT_MSG_EQ (q->Enqueue (Frame (1500, 40, 5)), false, "arriving 40 dropped");
        // Rank 30 == worst buffered 30: "less than or equal" priority -> arriving dropped.
        NS_TEST_ASSERT_MSG_EQ (q->Enqueue (Frame (1500, 30, 6)), false, "tie drops arriving");
        NS_TEST_ASSERT_MSG_EQ (q->GetDroppedPackets (), 3u, "three drops");
        NS_TEST_ASSERT_MSG_EQ (drops.size (), 3u, "three drops traced");
        NS_TEST_ASSERT_MSG_EQ (drops[1].first, 40u, "arriving 40 traced");
        NS_TEST_ASSERT_MSG_EQ (drops[2].first, 30u, "arriving 30 traced");
        // A 58 B ACK-sized frame of rank 0 into the full buffer evicts the worst (30) only.
        NS_TEST_ASSERT_MSG_EQ (q->Enqueue (Frame (58, 0, 7)), true, "small urgent frame");
        NS_TEST_ASSERT_MSG_EQ (q->GetNBytes (), 3000u + 58u, "one 1500 B frame evicted");
        NS_TEST_ASSERT_MSG_EQ (drops.size (), 4u, "fourth drop traced");
        NS_TEST_ASSERT_MSG_EQ (drops[3].first, 30u, "the buffered rank-30 frame was evicted");
        NS_TEST_ASSERT_MSG_EQ (q->GetEnqueuedPackets (), 5u, "accepted: 50, 10, 30, 20, 0");
        FabricQueueItem item;
        uint32_t ranks[3];
        for (uint32_t& rank : ranks)
        {
            q->Dequeue (item);
            rank = item.header.rank;
        }
        NS_TEST_ASSERT_MSG_EQ (ranks[0], 0u, "rank 0 first");
        NS_TEST_ASSERT_MSG_EQ (ranks[1], 10u, "then 10");
        NS_TEST_ASSERT_MSG_EQ (ranks[2], 20u, "then 20");
        NS_TEST_ASSERT_MSG_EQ (q->IsEmpty (), true, "empty");
        NS_TEST_ASSERT_MSG_EQ (dequeues, 3u, "only transmitted frames are dequeued");

        // Starvation prevention: flow 8 has an early frame of rank 30 and a later one of rank
        // 10; flow 9 has rank 20.  The best frame (10) names flow 8, whose EARLIEST frame
        // (rank 30) goes first; then flow 8's rank 10; then flow 9.
        Ptr<PfabricQueue> s = CreateObject<PfabricQueue> ();
        s->Enqueue (Frame (1500, 30, 8));
        s->Enqueue (Frame (1500, 20, 9));
        s->Enqueue (Frame (1500, 10, 8));
        uint32_t order[3];
        for (uint32_t& rank : order)
        {
            s->Dequeue (item);
            rank = item.header.rank;
        }
        NS_TEST_ASSERT_MSG_EQ (order[0], 30u, "flow 8's earliest frame first");
        NS_TEST_ASSERT_MSG_EQ (order[1], 10u, "then flow 8's second");
        NS_TEST_ASSERT_MSG_EQ (order[2], 20u, "then flow 9");

        // Cut-through eligibility: a frame whose tail is still arriving (notBefore > now)
        // does not go before a frame that can start now, whatever their priorities; when
        // none can start, the first to become ready goes.  (At t = 0.)
        Ptr<PfabricQueue> c = CreateObject<PfabricQueue> ();
        FabricQueueItem late = Frame (1500, 5, 10);
        late.notBefore = NanoSeconds (200);
        c->Enqueue (std::move (late));
        c->Enqueue (Frame (1500, 50, 11));
        c->Dequeue (item);
        NS_TEST_ASSERT_MSG_EQ (item.header.rank, 50u, "the ready frame first");
        FabricQueueItem later = Frame (1500, 1, 12);
        later.notBefore = NanoSeconds (300);
        c->Enqueue (std::move (later));
        c->Dequeue (item);
        NS_TEST_ASSERT_MSG_EQ (item.header.rank, 5u, "none ready: the first to be ready");
        c->Dequeue (item);
        NS_TEST_ASSERT_MSG_EQ (item.header.rank, 1u, "then the other");
    }
};

/// DropIfRefused (a sender asks its NIC before building a frame) agrees with Enqueue: for
/// each arrival, a twin queue with the same frames is the oracle.
class PfabricQueueRefusedArrivalTest : public TestCase
{
  public:
    PfabricQueueRefusedArrivalTest ()
          : TestCase ("PfabricQueue: DropIfRefused drops exactly the arrivals Enqueue drops "
                      "outright, counted the same")
    {
    }

  private:
    static Ptr<PfabricQueue> Full ()
    {
        // 3 x 1500 B in a 4500 B buffer, ranks 10, 30, 20: full, least urgent rank 30.
        Ptr<PfabricQueue> q = CreateObject<PfabricQueue> ();
        q->SetMaxBytes (3 * 1500);
        q->Enqueue (Frame (1500, 10, 1));
        q->Enqueue (Frame (1500, 30, 2));
        q->Enqueue (Frame (1500, 20, 3));
        return q;
    }

    void DoRun () override
    {
        struct Arrival
        {
            uint32_t bytes;
            uint32_t rank;
            bool refused; // by hand: it does not fit, and rank >= 30 (SIGCOMM'13 §4.2)
        };
        const Arrival arrivals[] = {{1500, 5, false}, {1500, 29, false}, {1500, 30, true},
                                    {1500, 31, true}, {58, 40, true},    {58, 0, false}};
        for (const Arrival& a : arrivals)
        {
            Ptr<PfabricQueue> asked = Full ();
            Ptr<PfabricQueue> twin = Full ();
            FabricQueueItem frame = Frame (a.bytes, a.rank, 9);
            const bool refused = asked->DropIfRefused (frame.header, a.bytes);
            const bool enqueued = twin->Enqueue (std::move (frame));
            NS_TEST_ASSERT_MSG_EQ (refused, a.refused, "rank " << a.rank << ": by hand");
            // Refused <=> Enqueue dropped the arrival without evicting anything.
            NS_TEST_ASSERT_MSG_EQ (refused, !enqueued && twin->GetNPackets () == 3u,
                                   "rank " << a.rank << ": as Enqueue");
            if (refused)
            {
                NS_TEST_ASSERT_MSG_EQ (asked->GetDroppedPackets (), twin->GetDroppedPackets (),
                                       "counted as Enqueue counts it");
            }
            else
            {
                NS_TEST_ASSERT_MSG_EQ (asked->GetDroppedPackets (), 0u, "nothing counted");
            }
            NS_TEST_ASSERT_MSG_EQ (asked->GetNBytes (), 4500u, "the queue is untouched");
        }
        // Room for the arrival: never refused, whatever its rank.
        Ptr<PfabricQueue> roomy = CreateObject<PfabricQueue> ();
        roomy->SetMaxBytes (3 * 1500);
        roomy->Enqueue (Frame (1500, 10, 1));
        NS_TEST_ASSERT_MSG_EQ (roomy->DropIfRefused (Frame (1500, 99, 2).header, 1500), false,
                               "fits");
        // A Drop trace sink is owed the frame: DropIfRefused declines, Enqueue decides.
        Ptr<PfabricQueue> traced = Full ();
        uint32_t traces = 0;
        traced->TraceConnectWithoutContext (
            "Drop", MakeBoundCallback (
                        +[] (uint32_t* n, const FabricQueueItem&, uint32_t) { ++*n; }, &traces));
        NS_TEST_ASSERT_MSG_EQ (traced->DropIfRefused (Frame (1500, 50, 2).header, 1500), false,
                               "declines while traced");
        NS_TEST_ASSERT_MSG_EQ (traced->GetDroppedPackets (), 0u, "nothing counted");
        NS_TEST_ASSERT_MSG_EQ (traces, 0u, "nothing traced");
    }
};

/// A lone flow finishes exactly at the model's ideal FCT: slowdown 1.0.
class PfabricLoneFlowTest : public TestCase
{
  public:
    PfabricLoneFlowTest ()
          : TestCase ("pFabric lone flow: FCT == ClosTopology::IdealFct (slowdown 1.0)")
    {
    }

  private:
    void DoRun () override
    {
        // (src, dst, bytes): intra-rack (0 -> 1) and inter-rack (0 -> 4); 1 packet, a
        // partial packet, 7 packets (inside the initial window) and 100 packets (window
        // growth must keep the pipe full), and 100 kB (68 full packets + 720 B).
        struct Case
        {
            uint32_t src;
            uint32_t dst;
            uint64_t bytes;
        };

        const Case cases[] = {{0, 1, 1460},       {0, 4, 1460},     {0, 4, 100},
                              {0, 1, 7 * 1460},   {0, 4, 7 * 1460}, {0, 1, 100 * 1460},
                              {0, 4, 100 * 1460}, {0, 4, 100000}};
        for (const Case& c : cases)
        {
            Fabric fabric;
            fabric.Add (0, c.src, c.dst, c.bytes, 1000);
            Simulator::Run ();
            NS_TEST_ASSERT_MSG_EQ (fabric.finish.count (0), 1u, "flow finished");
            Time fct = fabric.finish[0] - NanoSeconds (1000);
            Time ideal = fabric.Ideal (c.src, c.dst, c.bytes);
            NS_TEST_ASSERT_MSG_EQ (fct, ideal,
                                   "lone flow " << c.src << "->" << c.dst << " " << c.bytes
                                                << " B: fct " << fct << " ideal " << ideal);
            NS_TEST_ASSERT_MSG_EQ (fabric.transport->GetPriorityDrops (), 0u, "no drops");
            Simulator::Destroy ();
        }
    }
};

/// A lone flow at 40 and 100 Gbps, within and across racks, finishes at an FCT derived by
/// hand from the wire bytes, cables and switches (slowdown 1 +- 1e-6).
class PfabricLoneFlowByHandTest : public TestCase
{
  public:
    explicit PfabricLoneFlowByHandTest (const std::string& rate)
          : TestCase ("pFabric lone flow, " + rate + ": hand-derived FCT, slowdown 1 +- 1e-6")
          , m_rate (rate)
    {
    }

  private:
    void DoRun () override
    {
        // Per packet: 1460 B payload + 22 B pFabric header + 18 B frame = 1500 B = 12000 bit;
        // a 4096 B page is 1500 + 1500 + (1176 + 40) B = 4216 B = 33728 bit; 100 kB is 68
        // full packets + 720 B = 102760 B = 822080 bit.  Serialization at the access rate:
        //   40 Gbps:  1460 B 300 ns, 4096 B 843.2 ns, 100 kB 20552 ns
        //   100 Gbps: 1460 B 120 ns, 4096 B 337.28 ns, 100 kB 8220.8 ns
        // Cut-through path: intra rack 2 x 20 ns (4 m at 5 ns/m) + 240 ns (one ToR) = 280 ns;
        // inter rack 2 x 20 + 2 x 200 ns (40 m) + 3 x 240 ns = 1160 ns, plus the
        // re-serialization of a full packet after the 4x faster uplink: 300 - 75 = 225 ns at
        // 40 Gbps, 120 - 30 = 90 ns at 100 Gbps.  The first window covers the BDP, so the
        // sender never stalls (PfabricDerivedConfigTest).
        struct Case
        {
            uint32_t dst;
            uint64_t bytes;
            int64_t fctPs40;
            int64_t fctPs100;
        };

        const Case cases[] = {
            {1, 1460, 300000 + 280000, 120000 + 280000},                         // 580 / 400 ns
            {4, 1460, 300000 + 1160000 + 225000, 120000 + 1160000 + 90000},      // 1685 / 1370
            {1, 4096, 843200 + 280000, 337280 + 280000},                         // 1123.2 / 617.28
            {4, 4096, 843200 + 1160000 + 225000, 337280 + 1160000 + 90000},      // 2228.2 / 1587.28
            {1, 100000, 20552000 + 280000, 8220800 + 280000},                    // 20832 / 8500.8
            {4, 100000, 20552000 + 1160000 + 225000, 8220800 + 1160000 + 90000}, // 21937 / 9470.8
        };
        for (const Case& c : cases)
        {
            Fabric fabric ("", m_rate);
            fabric.Add (0, 0, c.dst, c.bytes, 1000);
            Simulator::Run ();
            NS_TEST_ASSERT_MSG_EQ (fabric.finish.count (0), 1u, "flow finished");
            Time fct = fabric.finish[0] - NanoSeconds (1000);
            int64_t expected = m_rate == "40Gbps" ? c.fctPs40 : c.fctPs100;
            NS_TEST_ASSERT_MSG_EQ (fct.GetPicoSeconds (), expected,
                                   "0 -> " << c.dst << ", " << c.bytes << " B at " << m_rate);
            NS_TEST_ASSERT_MSG_EQ_TOL (
                double (fct.GetPicoSeconds ()) /
                    double (fabric.Ideal (0, c.dst, c.bytes).GetPicoSeconds ()),
                1.0, 1e-6, "slowdown");
            NS_TEST_ASSERT_MSG_EQ (fabric.transport->GetPriorityDrops (), 0u, "no drops");
            Simulator::Destroy ();
        }
    }

    std::string m_rate;
};

/// On one congested port, flows finish in SRPT order and the shortest one barely waits.
class PfabricSrptOrderTest : public TestCase
{
  public:
    PfabricSrptOrderTest ()
          : TestCase ("pFabric: flows sharing a receiver finish shortest-first")
    {
    }

  private:
    void DoRun () override
    {
        // Hosts 0, 1, 2 (rack 0) send 60, 20 and 5 packets to host 3 (rack 0), all at t = 0.
        // The ToR -> host 3 port carries 85 packets; pFabric serves the smallest remaining
        // size first, so the 5-packet flow finishes first, then the 20-packet, then the
        // 60-packet flow.  Bounds:
        // - 5-packet flow: at most 2 frames of the other flows (their first packets arrive
        //   together with its own) go before its first one, after which it always has the
        //   highest priority: fct <= ideal + 2 x T(1500 B).
        // - 60-packet flow: the port must have sent all 85 x 1500 B first:
        //   fct >= ideal(60 packets) + 25 x T(1500 B).
        Fabric fabric;
        fabric.Add (0, 0, 3, 60 * 1460);
        fabric.Add (1, 1, 3, 20 * 1460);
        fabric.Add (2, 2, 3, 5 * 1460);
        Simulator::Run ();
        NS_TEST_ASSERT_MSG_EQ (fabric.finish.size (), 3u, "all finished");
        Time small = fabric.finish[2];
        Time mid = fabric.finish[1];
        Time large = fabric.finish[0];
        NS_TEST_ASSERT_MSG_LT (small, mid, "5 packets before 20 packets");
        NS_TEST_ASSERT_MSG_LT (mid, large, "20 packets before 60 packets");
        Time t = fabric.FrameTime ();
        NS_TEST_ASSERT_MSG_LT_OR_EQ (small, fabric.Ideal (2, 3, 5 * 1460) + 2 * t, "short waits");
        NS_TEST_ASSERT_MSG_GT_OR_EQ (small, fabric.Ideal (2, 3, 5 * 1460), "never below ideal");
        NS_TEST_ASSERT_MSG_GT_OR_EQ (large, fabric.Ideal (0, 3, 60 * 1460) + 25 * t, "work");
        Simulator::Destroy ();
    }
};

/// A flow whose last packet is lost recovers one RTO after its last advancing ACK.
class PfabricTailLossTest : public TestCase
{
  public:
    PfabricTailLossTest ()
          : TestCase ("pFabric: lost tail packet is retransmitted on the fixed RTO")
    {
    }

  private:
    void DoRun () override
    {
        // Flow 0: host 0 -> host 1 (same rack), 5 packets; the ToR drops packet 4 (offset
        // 4 x 1460) once.  Packets 0-3 arrive as in a lone 4-packet flow, at
        // start + Ideal(4 packets); the ACK of packet 3 (cumulative ACK 4 x 1460) reaches
        // the sender Ideal(0 B frame, 1 -> 0) later, re-arming the timer to fire Rto after
        // that.  On expiry packet 4 is resent alone and arrives Ideal(1 packet) later:
        //   finish = start + Ideal(4 x 1460) + Ideal(ACK) + Rto + Ideal(1460).
        TailDropQueue::s_dropped = 0;
        Config::SetDefault ("ns3::PfabricTestTailDropQueue::DropSeq", UintegerValue (4 * kMss));
        Fabric fabric ("ns3::PfabricTestTailDropQueue");
        Time start = NanoSeconds (1000);
        fabric.Add (0, 0, 1, 5 * kMss, start.GetNanoSeconds ());
        Simulator::Run ();
        NS_TEST_ASSERT_MSG_EQ (TailDropQueue::s_dropped, 1u, "tail dropped once");
        NS_TEST_ASSERT_MSG_EQ (fabric.finish.count (0), 1u, "flow finished");
        Time rto = fabric.transport->GetRto ();
        Time expected = start + fabric.Ideal (0, 1, 4 * kMss) + fabric.Ideal (1, 0, 0) + rto +
                        fabric.Ideal (0, 1, kMss);
        NS_TEST_ASSERT_MSG_EQ (fabric.finish[0], expected, "recovery time");
        NS_TEST_ASSERT_MSG_EQ (fabric.transport->GetTimeouts (), 1u, "exactly one timeout");
        // The derived RTO is max(3 x the base RTT, MinRto = 45 us) (doc/pfabric.md §6).
        NS_TEST_ASSERT_MSG_EQ (rto, MicroSeconds (45), "Rto = 45 us floor");
        Simulator::Destroy ();
        Config::SetDefault ("ns3::PfabricTestTailDropQueue::DropSeq", UintegerValue (0));
    }
};

/// Window and RTO derived from the topology's BDP (doc/pfabric.md §6), worked by hand.
class PfabricDerivedConfigTest : public TestCase
{
  public:
    PfabricDerivedConfigTest ()
          : TestCase ("pFabric: InitialCwnd, MaxCwnd and Rto derived from the topology's BDP")
    {
    }

  private:
    void DoRun () override
    {
        Fabric fabric;
        // rtt = Ideal(full data packet, 0 -> 4) + Ideal(ACK, 4 -> 0);
        // cwnd = max(2, ceil(40e9 b/s x rtt / 8 / 1500 B)); max = cwnd + 3;
        // rto = max(3 rtt, MinRto).
        Time rtt = fabric.Ideal (0, 4, kMss) + fabric.topology->IdealFct (4, 0, 0, 22, kMss);
        NS_TEST_ASSERT_MSG_EQ (fabric.transport->GetBaseRtt (), rtt, "base RTT");
        double bdp = 40e9 * rtt.GetSeconds () / 8.0;
        uint32_t cwnd = std::max<uint32_t> (2, static_cast<uint32_t> (std::ceil (bdp / 1500.0)));
        NS_TEST_ASSERT_MSG_EQ (fabric.transport->GetInitialCwnd (), cwnd, "InitialCwnd");
        NS_TEST_ASSERT_MSG_EQ (fabric.transport->GetMaxCwnd (), cwnd + 3, "MaxCwnd");
        // Here 3 rtt (~8.6 us) is below the floor, so the floor is the timeout.
        NS_TEST_ASSERT_MSG_LT (3 * rtt, MicroSeconds (45), "3 rtt below the floor");
        NS_TEST_ASSERT_MSG_EQ (fabric.transport->GetRto (), MicroSeconds (45), "Rto = MinRto");
        Simulator::Destroy ();

        // Without the floor, the timeout is 3 rtt.
        Config::SetDefault ("ns3::PfabricSender::MinRto", TimeValue (Time (0)));
        {
            Fabric noFloor;
            NS_TEST_ASSERT_MSG_EQ (noFloor.transport->GetRto (), 3 * rtt, "Rto = 3 rtt");
            Simulator::Destroy ();
        }
        Config::SetDefault ("ns3::PfabricSender::MinRto", TimeValue (MicroSeconds (45)));

        // A fabric with 2 km spine cables (20 us of propagation round trip per cable pair):
        // 3 rtt exceeds the floor and is the timeout.
        Config::SetDefault ("ns3::ClosTopology::InterRackCableM", DoubleValue (2000));
        {
            Fabric longCables;
            Time longRtt =
                longCables.Ideal (0, 4, kMss) + longCables.topology->IdealFct (4, 0, 0, 22, kMss);
            NS_TEST_ASSERT_MSG_GT (3 * longRtt, MicroSeconds (45), "3 rtt above the floor");
            NS_TEST_ASSERT_MSG_EQ (longCables.transport->GetRto (), 3 * longRtt, "Rto = 3 rtt");
            Simulator::Destroy ();
        }
        Config::SetDefault ("ns3::ClosTopology::InterRackCableM", DoubleValue (40));
    }
};

class PfabricTestSuite : public TestSuite
{
  public:
    PfabricTestSuite ()
          : TestSuite ("disaggsim-pfabric", UNIT)
    {
        AddTestCase (new PfabricWireFramesTest, TestCase::QUICK);
        AddTestCase (new PfabricSenderAttributesTest, TestCase::QUICK);
        AddTestCase (new PfabricQueueRulesTest, TestCase::QUICK);
        AddTestCase (new PfabricQueueWorstAfterDequeueTest, TestCase::QUICK);
        AddTestCase (new PfabricQueueRefusedArrivalTest, TestCase::QUICK);
        AddTestCase (new PfabricDerivedConfigTest, TestCase::QUICK);
        AddTestCase (new PfabricLoneFlowTest, TestCase::QUICK);
        AddTestCase (new PfabricLoneFlowByHandTest ("40Gbps"), TestCase::QUICK);
        AddTestCase (new PfabricLoneFlowByHandTest ("100Gbps"), TestCase::QUICK);
        AddTestCase (new PfabricSrptOrderTest, TestCase::QUICK);
        AddTestCase (new PfabricTailLossTest, TestCase::QUICK);
    }
};

static PfabricTestSuite g_pfabricTestSuite;
