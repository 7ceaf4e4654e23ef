/*
 * disaggsim: tests of the port seam (traffic classes, pause, PFC frames, shared buffer).
 * Every expected value is derived by hand in the comment next to it.
 */
#include "topologies/model/clos-topology.h"
#include "topologies/model/drop-tail-ecn-queue.h"
#include "topologies/model/fabric-channel.h"
#include "topologies/model/fabric-header.h"
#include "topologies/model/fabric-net-device.h"
#include "topologies/model/fabric-shared-buffer.h"
#include "topologies/model/pfc-header.h"
#include "topologies/model/strict-priority-queue.h"

#include "ns3/core-module.h"
#include "ns3/node.h"
#include "ns3/test.h"

#include <vector>

using namespace ns3;

namespace
{

/// A frame of \p payloadBytes (the frame's identity in these tests) in \p trafficClass.
FabricQueueItem
ClassFrame (uint32_t payloadBytes, uint8_t trafficClass)
{
    FabricHeader header;
    header.payloadBytes = payloadBytes;
    header.trafficClass = trafficClass;
    return FabricQueueItem{Create<Packet> (payloadBytes), header, Time (0)};
}

/// Two hosts' ports joined by one cable of 20 ns (4 m x 5 ns/m, Table 4) at 40 Gbps: a
/// 1482 B packet is 1500 wire bytes, 300 ns; a PFC frame 64 B, 12.8 ns.
struct Link
{
    Ptr<FabricNetDevice> a;
    Ptr<FabricNetDevice> b;
    std::vector<Time> arrivalsAtB;
    uint32_t framesAtA{0};

    Link ()
    {
        Ptr<FabricChannel> channel = CreateObject<FabricChannel> ();
        channel->SetAttribute ("Delay", TimeValue (NanoSeconds (20)));
        for (Ptr<FabricNetDevice>* device : {&a, &b})
        {
            *device = CreateObject<FabricNetDevice> ();
            (*device)->SetDataRate (DataRate ("40Gbps"));
            (*device)->SetQueue (CreateObject<DropTailEcnQueue> ());
            CreateObject<Node> ()->AddDevice (*device);
            (*device)->Attach (channel);
        }
        b->SetFabricReceiveCallback (MakeCallback (&Link::AtB, this));
        a->SetFabricReceiveCallback (MakeCallback (&Link::AtA, this));
    }

    void AtB (Ptr<FabricNetDevice>, const Ptr<Packet>&, const FabricHeader&, Time)
    {
        arrivalsAtB.push_back (Simulator::Now ());
    }

    void AtA (Ptr<FabricNetDevice>, const Ptr<Packet>&, const FabricHeader&, Time)
    {
        ++framesAtA;
    }

    /// Host a sends \p n frames of 1482 B (1500 B on the wire) to b now.
    void SendFromA (uint32_t n)
    {
        for (uint32_t i = 0; i < n; ++i)
        {
            FabricHeader header;
            header.dstHost = 1;
            header.payloadBytes = 1482;
            a->SendFabric (Create<Packet> (1482), header);
        }
    }
};

} // namespace

/// StrictPriorityQueue: class 0 first; paused classes are skipped; with Classes < 8 the last
/// queue holds the classes above it and is paused by any of them.
class StrictPriorityQueueTestCase : public TestCase
{
  public:
    StrictPriorityQueueTestCase ()
          : TestCase ("StrictPriorityQueue: classes 3,0,7,3,1 leave as 0,1,3,3,7; paused classes "
                      "skipped")
    {
    }

  private:
    void DoRun () override
    {
        Ptr<StrictPriorityQueue> queue = CreateObject<StrictPriorityQueue> ();
        // Payload = 100 x class + arrival index, so the order is readable.
        const std::vector<std::pair<uint32_t, uint8_t>> arrivals = {
            {300, 3}, {1, 0}, {702, 7}, {303, 3}, {104, 1}};
        for (const auto& [payload, cls] : arrivals)
        {
            NS_TEST_ASSERT_MSG_EQ (queue->Enqueue (ClassFrame (payload, cls)), true, "accepted");
        }
        const std::vector<uint32_t> order = {1, 104, 300, 303, 702}; // strict, FIFO per class
        FabricQueueItem item;
        for (uint32_t expected : order)
        {
            NS_TEST_ASSERT_MSG_EQ (queue->Dequeue (item), true, "a frame waits");
            NS_TEST_ASSERT_MSG_EQ (item.header.payloadBytes, expected, "strict priority order");
        }

        // Classes 0, 1, 2 waiting; 0 and 2 paused: only class 1 may leave, then nothing.
        for (uint8_t cls : {0, 1, 2})
        {
            queue->Enqueue (ClassFrame (100 * cls + 10, cls));
        }
        const uint8_t paused = (1u << 0) | (1u << 2);
        NS_TEST_ASSERT_MSG_EQ (queue->Dequeue (item, Simulator::Now (), paused), true, "class 1");
        NS_TEST_ASSERT_MSG_EQ (item.header.payloadBytes, 110u, "the unpaused class");
        NS_TEST_ASSERT_MSG_EQ (queue->Dequeue (item, Simulator::Now (), paused), false,
                               "classes 0 and 2 are paused");
        NS_TEST_ASSERT_MSG_EQ (queue->GetNPackets (), 2u, "a refused dequeue changes nothing");
        NS_TEST_ASSERT_MSG_EQ (queue->GetNBytes (), (10u + 18u) + (210u + 18u), "wire bytes");
        NS_TEST_ASSERT_MSG_EQ (queue->Dequeue (item, Simulator::Now (), 0), true, "resumed");
        NS_TEST_ASSERT_MSG_EQ (item.header.payloadBytes, 10u, "class 0 first again");

        // Classes = 3: queue 2 holds classes 2..7, so pausing class 7 stops a class-5 frame,
        // pausing class 1 does not.
        Ptr<StrictPriorityQueue> three = CreateObjectWithAttributes<StrictPriorityQueue> (
            "Classes", UintegerValue (3));
        three->Enqueue (ClassFrame (500, 5));
        NS_TEST_ASSERT_MSG_EQ (three->GetNPacketsAt (2), 1u, "class 5 in the last queue");
        NS_TEST_ASSERT_MSG_EQ (three->Dequeue (item, Simulator::Now (), 1u << 7), false,
                               "the last queue is paused by class 7");
        NS_TEST_ASSERT_MSG_EQ (three->Dequeue (item, Simulator::Now (), 1u << 1), true,
                               "class 1's pause leaves the last queue alone");
        Simulator::Destroy ();
    }
};

/// A class-blind discipline (one FIFO for all classes) sends nothing while any class is
/// paused, like a port under 802.3x PAUSE.
class ClassBlindPauseTestCase : public TestCase
{
  public:
    ClassBlindPauseTestCase ()
          : TestCase ("class-blind queue (DropTailEcnQueue) stops while any class is paused")
    {
    }

  private:
    void DoRun () override
    {
        Ptr<DropTailEcnQueue> queue = CreateObject<DropTailEcnQueue> ();
        queue->Enqueue (ClassFrame (100, 0));
        queue->Enqueue (ClassFrame (200, 0));
        FabricQueueItem item;
        NS_TEST_ASSERT_MSG_EQ (queue->Dequeue (item, Simulator::Now (), 1u << 5), false,
                               "class 5 paused: the FIFO does not reorder");
        NS_TEST_ASSERT_MSG_EQ (queue->GetNPackets (), 2u, "nothing left");
        NS_TEST_ASSERT_MSG_EQ (queue->Dequeue (item, Simulator::Now (), 0), true, "no pause");
        NS_TEST_ASSERT_MSG_EQ (item.header.payloadBytes, 100u, "FIFO");
        Simulator::Destroy ();
    }
};

/// Pause (0) on an idle port holds back even the first frame (no pass-through); Resume at
/// 1 us restarts the idle port: frame k (1500 wire B, 300 ns at 40 Gbps) reaches b at
/// 1000 + 300 (k + 1) + 20 ns.
class PauseResumeTestCase : public TestCase
{
  public:
    PauseResumeTestCase ()
          : TestCase ("Pause, Resume: a paused idle port sends at Resume, 1320 and 1620 ns")
    {
    }

  private:
    void DoRun () override
    {
        Link link;
        link.a->Pause (0);
        link.SendFromA (2);
        Simulator::Schedule (MicroSeconds (1), [&link] () {
            NS_ASSERT (link.arrivalsAtB.empty ());
            link.a->Resume (0);
        });
        Simulator::Run ();
        NS_TEST_ASSERT_MSG_EQ (link.arrivalsAtB.size (), 2u, "both frames arrive");
        NS_TEST_ASSERT_MSG_EQ (link.arrivalsAtB[0], NanoSeconds (1320), "1000 + 300 + 20");
        NS_TEST_ASSERT_MSG_EQ (link.arrivalsAtB[1], NanoSeconds (1620), "+ 300");
        NS_TEST_ASSERT_MSG_EQ (link.a->GetPausedTime (0), MicroSeconds (1), "paused 0..1 us");
        Simulator::Destroy ();
    }
};

/**
 * PFC frames: b sends a pause of q quanta at 100 ns while a sends 3 frames from t = 0.  The
 * 64 B frame takes 12.8 ns at 40 Gbps and 20 ns on the cable: a gets it at 132.8 ns, during
 * its frame 0 (0..300 ns), which finishes (arrival 320 ns).  Timer (q = 100): 100 x 512 bit
 * / 40 Gbps = 1280 ns, so frame 1 starts at 1412.8 ns and arrives at 1732.8 ns, frame 2 at
 * 2032.8 ns.  XON instead (q = 0xFFFF at 100 ns, then q = 0 at 500 ns, received at 532.8 ns):
 * frame 1 arrives at 852.8 ns, frame 2 at 1152.8 ns.  The pause frames terminate at a: its
 * receive callback sees none of them.
 */
class PfcFrameTestCase : public TestCase
{
  public:
    explicit PfcFrameTestCase (bool xon)
          : TestCase (std::string ("PFC frame on the wire: ") +
                      (xon ? "XOFF then XON, frames at 320, 852.8, 1152.8 ns"
                           : "100 quanta = 1280 ns, frames at 320, 1732.8, 2032.8 ns"))
          , m_xon (xon)
    {
    }

  private:
    void DoRun () override
    {
        Link link;
        link.SendFromA (3);
        const uint16_t quanta = m_xon ? kPfcMaxQuanta : 100;
        Simulator::Schedule (NanoSeconds (100), &FabricNetDevice::SendPfc, link.b, 1, quanta);
        if (m_xon)
        {
            Simulator::Schedule (NanoSeconds (500), &FabricNetDevice::SendPfc, link.b, 1, 0);
        }
        Simulator::Run ();
        NS_TEST_ASSERT_MSG_EQ (link.arrivalsAtB.size (), 3u, "every frame arrives");
        const Time resumeAt = m_xon ? PicoSeconds (532800) : PicoSeconds (1412800);
        NS_TEST_ASSERT_MSG_EQ (link.arrivalsAtB[0], NanoSeconds (320), "frame 0 finishes");
        NS_TEST_ASSERT_MSG_EQ (link.arrivalsAtB[1], resumeAt + NanoSeconds (320), "frame 1");
        NS_TEST_ASSERT_MSG_EQ (link.arrivalsAtB[2], resumeAt + NanoSeconds (620), "frame 2");
        const uint64_t frames = m_xon ? 2 : 1;
        NS_TEST_ASSERT_MSG_EQ (link.b->GetPfcFramesSent (), frames, "sent by b");
        NS_TEST_ASSERT_MSG_EQ (link.a->GetPfcFramesReceived (), frames, "received by a");
        NS_TEST_ASSERT_MSG_EQ (link.framesAtA, 0u, "MAC control stops at the port");
        NS_TEST_ASSERT_MSG_EQ (link.a->GetRxPackets (), 0u, "and is no data frame");
        NS_TEST_ASSERT_MSG_EQ (link.a->GetPausedTime (0), resumeAt - PicoSeconds (132800),
                               "paused from the pause frame's arrival");
        NS_TEST_ASSERT_MSG_EQ (link.a->GetPausedClasses (), 0u, "nothing paused at the end");
        Simulator::Destroy ();
    }

    bool m_xon;
};

/// PfcHeader is the 46 B MAC control payload (64 B on the wire) and reads back what it wrote.
class PfcHeaderTestCase : public TestCase
{
  public:
    PfcHeaderTestCase ()
          : TestCase ("PfcHeader: 46 B payload + 18 B = 64 B frame; fields round-trip")
    {
    }

  private:
    void DoRun () override
    {
        PfcHeader written;
        written.classEnable = 0x09;
        written.quanta[0] = 7;
        written.quanta[3] = 0xFFFF;
        Ptr<Packet> packet = Create<Packet> ();
        packet->AddHeader (written);
        NS_TEST_ASSERT_MSG_EQ (packet->GetSize () + kFabricHeaderBytes, kPfcFrameBytes,
                               "minimum Ethernet frame");
        PfcHeader read;
        packet->RemoveHeader (read);
        NS_TEST_ASSERT_MSG_EQ (read.opcode, 0x0101, "PFC opcode");
        NS_TEST_ASSERT_MSG_EQ (uint32_t (read.classEnable), 0x09u, "enable vector");
        NS_TEST_ASSERT_MSG_EQ (read.quanta[0], 7, "class 0 time");
        NS_TEST_ASSERT_MSG_EQ (read.quanta[3], 0xFFFF, "class 3 time");
        NS_TEST_ASSERT_MSG_EQ (read.quanta[1], 0, "class 1 time");
    }
};

/**
 * Shared buffer: hosts 0, 1 and 3 of rack 0 each send 2 frames of 1500 wire B to host 2
 * while the ToR's port to host 2 is paused, so nothing drains.  The port alone holds 36864
 * B (24 frames): all 6 fit.  With SharedBufferBytes = 3000 the switch holds 2 frames: 4 are
 * dropped, and after Resume host 2 receives 2 frames and the pool is empty again.
 */
class SharedBufferTestCase : public TestCase
{
  public:
    explicit SharedBufferTestCase (uint64_t sharedBytes)
          : TestCase ("switch shared buffer of " + std::to_string (sharedBytes) +
                      " B, 6 frames into a paused port: " +
                      (sharedBytes == 0 ? "0 dropped" : "4 dropped"))
          , m_sharedBytes (sharedBytes)
    {
    }

  private:
    void Received (Ptr<FabricNetDevice>, const Ptr<Packet>&, const FabricHeader&, Time)
    {
        ++m_received;
    }

    void DoRun () override
    {
        Config::SetDefault ("ns3::FabricSwitch::SharedBufferBytes", UintegerValue (m_sharedBytes));
        Ptr<ClosTopology> clos = CreateObject<ClosTopology> ();
        clos->Build ();
        Config::SetDefault ("ns3::FabricSwitch::SharedBufferBytes", UintegerValue (0));
        Ptr<FabricSwitch> tor = clos->GetTor (0);
        Ptr<FabricNetDevice> toHost2 = tor->GetPort (2);
        toHost2->Pause (0);
        clos->GetHostDevice (2)->SetFabricReceiveCallback (
            MakeCallback (&SharedBufferTestCase::Received, this));
        for (uint32_t src : {0u, 1u, 3u})
        {
            for (int i = 0; i < 2; ++i)
            {
                FabricHeader header;
                header.srcHost = static_cast<uint16_t> (src);
                header.dstHost = 2;
                header.payloadBytes = 1482;
                clos->GetHostDevice (src)->SendFabric (Create<Packet> (1482), header);
            }
        }
        Simulator::Schedule (MicroSeconds (5), [&] () {
            const uint32_t held = m_sharedBytes == 0 ? 6 : 2;
            NS_TEST_EXPECT_MSG_EQ (toHost2->GetQueue ()->GetNPackets (), held, "frames held");
            if (m_sharedBytes != 0)
            {
                NS_TEST_EXPECT_MSG_EQ (tor->GetSharedBuffer ()->GetUsedBytes (), 3000u,
                                       "pool full");
            }
            toHost2->Resume (0);
        });
        Simulator::Run ();
        const uint64_t dropped = m_sharedBytes == 0 ? 0 : 4;
        NS_TEST_ASSERT_MSG_EQ (toHost2->GetQueue ()->GetDroppedPackets (), dropped, "drops");
        NS_TEST_ASSERT_MSG_EQ (m_received, 6 - dropped, "frames delivered after Resume");
        const bool hasPool = tor->GetSharedBuffer () != nullptr;
        const bool askedForPool = m_sharedBytes != 0;
        NS_TEST_ASSERT_MSG_EQ (hasPool, askedForPool, "a pool only when asked for");
        if (m_sharedBytes != 0)
        {
            NS_TEST_ASSERT_MSG_EQ (tor->GetSharedBuffer ()->GetUsedBytes (), 0u, "pool drained");
            NS_TEST_ASSERT_MSG_EQ (tor->GetSharedBuffer ()->GetPeakBytes (), 3000u, "peak");
        }
        Simulator::Destroy ();
    }

    uint64_t m_sharedBytes;
    uint64_t m_received{0};
};

class PortTestSuite : public TestSuite
{
  public:
    PortTestSuite ()
          : TestSuite ("disaggsim-port", UNIT)
    {
        AddTestCase (new StrictPriorityQueueTestCase, TestCase::QUICK);
        AddTestCase (new ClassBlindPauseTestCase, TestCase::QUICK);
        AddTestCase (new PauseResumeTestCase, TestCase::QUICK);
        AddTestCase (new PfcFrameTestCase (false), TestCase::QUICK);
        AddTestCase (new PfcFrameTestCase (true), TestCase::QUICK);
        AddTestCase (new PfcHeaderTestCase, TestCase::QUICK);
        AddTestCase (new SharedBufferTestCase (0), TestCase::QUICK);
        AddTestCase (new SharedBufferTestCase (3000), TestCase::QUICK);
    }
};

static PortTestSuite g_portTestSuite;
