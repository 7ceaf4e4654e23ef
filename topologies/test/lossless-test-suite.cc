/*
 * disaggsim: tests of the lossless fabric (SwitchMmu: shared buffer, PFC, RED-ECN).
 * Every expected value is derived by hand in the comment next to it.
 */
#include "topologies/model/clos-topology.h"
#include "topologies/model/fabric-header.h"
#include "topologies/model/fabric-net-device.h"
#include "topologies/model/pfc-monitor.h"
#include "topologies/model/switch-mmu.h"

#include "ns3/core-module.h"
#include "ns3/test.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

using namespace ns3;

namespace
{

/// 1482 B payload: 1500 B on the wire, 300 ns at 40 Gbps.
constexpr uint32_t kPayload = 1482;

/// A Clos of the paper's defaults (40 Gbps, Table 4 delays) with \p attributes on
/// ClosTopology and \p mmu on every SwitchMmu (Config defaults, restored after Build).
Ptr<ClosTopology>
BuildFabric (const std::map<std::string, std::string>& attributes,
             const std::map<std::string, std::string>& mmu = {})
{
    for (const auto& [name, value] : mmu)
    {
        Config::SetDefault ("ns3::SwitchMmu::" + name, StringValue (value));
    }
    Ptr<ClosTopology> clos = CreateObject<ClosTopology> ();
    for (const auto& [name, value] : attributes)
    {
        clos->SetAttribute (name, StringValue (value));
    }
    clos->Build ();
    for (const auto& [name, value] : mmu)
    {
        // Back to the attribute's default for the next test.
        struct TypeId::AttributeInformation info;
        SwitchMmu::GetTypeId ().LookupAttributeByName (name, &info);
        Config::SetDefault ("ns3::SwitchMmu::" + name, *info.originalInitialValue);
    }
    return clos;
}

/// Send \p n 1482 B frames from host \p src to host \p dst now (back to back at the NIC);
/// the flow hash is \p flowHash, by default the source's rack, so senders of racks 1..4
/// take uplinks 1, 2, 3, 0.
void
SendFrames (Ptr<ClosTopology> clos, uint32_t src, uint32_t dst, uint32_t n,
            uint32_t flowHash = UINT32_MAX)
{
    for (uint32_t i = 0; i < n; ++i)
    {
        FabricHeader header;
        header.srcHost = static_cast<uint16_t> (src);
        header.dstHost = static_cast<uint16_t> (dst);
        header.flowHash = flowHash != UINT32_MAX ? flowHash : src / 16;
        header.payloadBytes = kPayload;
        clos->GetHostDevice (src)->SendFabric (Create<Packet> (kPayload), header);
    }
}

/// Every frame's arrival time at the hosts it was sent to, per source host.
struct Arrivals
{
    std::map<uint32_t, std::vector<Time>> bySource;
    uint32_t total{0};

    void Listen (Ptr<ClosTopology> clos, uint32_t host)
    {
        clos->GetHostDevice (host)->SetFabricReceiveCallback (
            MakeCallback (&Arrivals::Received, this));
    }

    void Received (Ptr<FabricNetDevice>, const Ptr<Packet>&, const FabricHeader& header, Time)
    {
        bySource[header.srcHost].push_back (Simulator::Now ());
        ++total;
    }
};

} // namespace

/**
 * Two senders, hand-derived PFC: hosts 1 and 2 each send 3 frames (1500 wire B, 300 ns) to
 * host 0 at t = 0 while the ToR's port to host 0 is paused until 10 us.  XOFF = 3000 B,
 * reserve 0, XON offset 3000 B (XON only when the ingress is empty).  Each frame reaches
 * the ToR's MMU at start + 20 ns cable + 240 ns switching: frames 0, 1 of each host at 260,
 * 560 ns.  At 560 ns each ingress holds 3000 B = XOFF: each ToR host port sends XOFF; it
 * takes 12.8 + 20 ns, so the hosts stop at 592.8 ns, after their frame 1 (300..600 ns), and
 * hold frame 2.  From 10 us the ToR sends h1f0, h2f0, h1f1, h2f1 (300 ns each); ingress 1
 * empties at the dequeue of h1f1 (10.6 us): XON, received at 10632.8 ns; h1f2 then reaches
 * the MMU at 10892.8 ns (1500 B < XOFF: no new pause) and leaves 11.2..11.5 us.  Ingress 2
 * empties at 10.9 us: XON, received at 10932.8 ns; h2f2 leaves 11.5..11.8 us.  So: 2 PFC
 * frames per ToR host port (XOFF, XON), host 1 paused 10040 ns, host 2 10340 ns; host 0
 * receives frames at 10320, 10620, 10920, 11220, 11520, 11820 ns (tail + 20 ns cable); no
 * drop; each ingress peaks at 3000 B.
 */
class TwoSenderPfcTestCase : public TestCase
{
  public:
    TwoSenderPfcTestCase ()
          : TestCase ("PFC, 2 senders into a paused port: 2 pause frames each, paused 10040 "
                      "and 10340 ns, deliveries at 10320 ... 11820 ns")
    {
    }

  private:
    void DoRun () override
    {
        Ptr<ClosTopology> clos =
            BuildFabric ({{"Fabric", "lossless"}},
                         {{"XoffBytes", "3000"}, {"ReserveBytes", "0"}, {"XonOffsetBytes", "3000"}});
        Ptr<FabricSwitch> tor = clos->GetTor (0);
        Ptr<SwitchMmu> mmu = DynamicCast<SwitchMmu> (tor->GetSharedBuffer ());
        NS_TEST_ASSERT_MSG_NE (mmu, nullptr, "the lossless ToR has a SwitchMmu");
        Arrivals arrivals;
        arrivals.Listen (clos, 0);
        Ptr<FabricNetDevice> toHost0 = tor->GetPort (0);
        toHost0->Pause (0);
        SendFrames (clos, 1, 0, 3);
        SendFrames (clos, 2, 0, 3);
        Simulator::Schedule (MicroSeconds (10), [toHost0] () { toHost0->Resume (0); });
        Simulator::Run ();

        std::vector<Time> all;
        for (const auto& [src, times] : arrivals.bySource)
        {
            all.insert (all.end (), times.begin (), times.end ());
        }
        std::sort (all.begin (), all.end ());
        const std::vector<int64_t> expectedNs = {10320, 10620, 10920, 11220, 11520, 11820};
        NS_TEST_ASSERT_MSG_EQ (all.size (), expectedNs.size (), "every frame arrives");
        for (std::size_t i = 0; i < all.size (); ++i)
        {
            NS_TEST_ASSERT_MSG_EQ (all[i], NanoSeconds (expectedNs[i]), "delivery " << i);
        }
        for (uint32_t port : {1u, 2u})
        {
            NS_TEST_ASSERT_MSG_EQ (tor->GetPort (port)->GetPfcFramesSent (), 2u,
                                   "XOFF + XON from ToR port " << port);
            NS_TEST_ASSERT_MSG_EQ (clos->GetHostDevice (port)->GetPfcFramesReceived (), 2u,
                                   "host " << port << " gets both");
            NS_TEST_ASSERT_MSG_EQ (mmu->GetPeakIngressBytes (port, 0), 3000u, "XOFF level");
        }
        NS_TEST_ASSERT_MSG_EQ (clos->GetHostDevice (1)->GetPausedTime (0), NanoSeconds (10040),
                               "592.8 .. 10632.8 ns");
        NS_TEST_ASSERT_MSG_EQ (clos->GetHostDevice (2)->GetPausedTime (0), NanoSeconds (10340),
                               "592.8 .. 10932.8 ns");
        NS_TEST_ASSERT_MSG_EQ (clos->GetSwitchPortDrops (), 0u, "lossless");
        NS_TEST_ASSERT_MSG_EQ (mmu->GetUsedBytes (), 0u, "the buffer drains");
        Simulator::Destroy ();
    }
};

/**
 * Incast through a small buffer: 8 senders, one per rack 1..8, send 40 frames each (60 KB)
 * to host 0 at once; the ToR port to host 0 is the bottleneck.  Lossy, the 36864 B port
 * buffer overflows (the ToR gets frames from the 4 spines, 2 senders each, at 8 x 40 Gbps
 * and drains at 40).
 * Lossless with a static XOFF of 6000 B and no reserve, every frame arrives, nothing is
 * dropped, and no ingress of any switch ever holds more than XOFF + its headroom (the
 * headroom formula, SwitchMmu::DerivedHeadroomBytes, bounds what arrives after a pause).
 */
class IncastTestCase : public TestCase
{
  public:
    explicit IncastTestCase (bool lossless)
          : TestCase (std::string ("incast of 8 x 40 frames into host 0, ") +
                      (lossless ? "lossless: 0 drops, ingress <= XOFF + headroom"
                                : "lossy: the port buffer drops"))
          , m_lossless (lossless)
    {
    }

  private:
    void DoRun () override
    {
        const uint64_t xoff = 6000;
        Ptr<ClosTopology> clos =
            BuildFabric ({{"Fabric", m_lossless ? "lossless" : "lossy"}},
                         {{"XoffBytes", std::to_string (xoff)}, {"ReserveBytes", "0"}});
        Arrivals arrivals;
        arrivals.Listen (clos, 0);
        const uint32_t frames = 40;
        for (uint32_t rack = 1; rack <= 8; ++rack)
        {
            SendFrames (clos, rack * 16, 0, frames);
        }
        Simulator::Run ();
        if (!m_lossless)
        {
            NS_TEST_ASSERT_MSG_GT (clos->GetSwitchPortDrops (), 0u, "a real incast");
            Simulator::Destroy ();
            return;
        }
        NS_TEST_ASSERT_MSG_EQ (clos->GetSwitchPortDrops (), 0u, "no drop");
        NS_TEST_ASSERT_MSG_EQ (arrivals.total, 8 * frames, "every frame arrives");
        uint64_t pauses = 0;
        for (const Ptr<FabricSwitch>& sw : clos->GetSwitches ())
        {
            Ptr<SwitchMmu> mmu = DynamicCast<SwitchMmu> (sw->GetSharedBuffer ());
            for (uint32_t port = 0; port < sw->GetNPorts (); ++port)
            {
                pauses += sw->GetPort (port)->GetPfcFramesSent ();
                NS_TEST_ASSERT_MSG_LT_OR_EQ (mmu->GetPeakIngressBytes (port, 0),
                                             xoff + mmu->GetHeadroomBytes (port),
                                             "ingress " << port << " of switch node "
                                                        << sw->GetPort (port)->GetNodeId ());
            }
            NS_TEST_ASSERT_MSG_EQ (mmu->GetUsedBytes (), 0u, "drained");
        }
        NS_TEST_ASSERT_MSG_GT (pauses, 0u, "PFC did the work");
        // Pause spreads back hop by hop: spine -> ToR 0 (1), ToR k's uplink by the spine (2),
        // host by ToR k (3).
        NS_TEST_ASSERT_MSG_EQ (clos->GetPfcMonitor ()->GetLongestPauseChain (), 3u,
                               "host <- ToR k <- spine <- ToR 0");
        Simulator::Destroy ();
    }

    bool m_lossless;
};

/**
 * Headroom formula, by hand: 40 Gbps, 200 ns cable, 240 ns switching, 1518 B frames, every
 * port of the switch at 40 Gbps: 3 x 1518 + 5 B/ns x (2 x 200 + 2 x max (240, 12.8)) ns =
 * 4554 + 4400 = 8954 B; the host link (20 ns): 4554 + 5 x 520 = 7154 B; 100 Gbps, 20 ns, no
 * switching delay: the pause frame's 5.12 ns counts, 4554 + 12.5 x (40 + 10.24) = 4554 +
 * 628 = 5182 B.  A 160 Gbps port on a switch with 40 Gbps ports: the frame the pause waits
 * behind may hold the port 1518 B / 40 Gbps = 303.6 ns, 6072 B at 160 Gbps, so 2 x 1518 +
 * 6072 + 20 B/ns x (400 + 480) = 26708 B.
 */
class HeadroomTestCase : public TestCase
{
  public:
    HeadroomTestCase ()
          : TestCase ("headroom = 2 max frames + the one the pause waits behind + rate x "
                      "(2 cable + 2 max (switching, pause frame)): 8954, 7154, 5182, 26708 B")
    {
    }

  private:
    void DoRun () override
    {
        const uint64_t g40 = 40000000000ULL;
        NS_TEST_ASSERT_MSG_EQ (
            SwitchMmu::DerivedHeadroomBytes (g40, NanoSeconds (200), NanoSeconds (240), 1518),
            8954u, "spine link");
        NS_TEST_ASSERT_MSG_EQ (
            SwitchMmu::DerivedHeadroomBytes (g40, NanoSeconds (20), NanoSeconds (240), 1518),
            7154u, "host link");
        NS_TEST_ASSERT_MSG_EQ (SwitchMmu::DerivedHeadroomBytes (100000000000ULL, NanoSeconds (20),
                                                                Time (0), 1518),
                               5182u, "the pause frame's own time");
        // The Clos's own ToR: port 0 is a host link, port 16 the uplink to spine 0.
        Ptr<ClosTopology> clos = BuildFabric ({{"Fabric", "lossless"}});
        Ptr<SwitchMmu> mmu = DynamicCast<SwitchMmu> (clos->GetTor (0)->GetSharedBuffer ());
        NS_TEST_ASSERT_MSG_EQ (mmu->GetHeadroomBytes (0), 7154u, "host port");
        NS_TEST_ASSERT_MSG_EQ (
            SwitchMmu::DerivedHeadroomBytes (4 * g40, NanoSeconds (200), NanoSeconds (240), 1518,
                                             g40),
            26708u, "160 Gbps port beside 40 Gbps ports");
        // The uplink runs at 160 Gbps beside 40 Gbps host ports: 26708 B.
        NS_TEST_ASSERT_MSG_EQ (mmu->GetHeadroomBytes (16), 26708u, "uplink");
        // Default size: 36864 B x 20 ports, pooled, + the headroom and 4 KB reserve of 16 host
        // ports and 4 uplinks: 737280 + 16 x (7154 + 4096) + 4 x (26708 + 4096) = 1040496 B.
        NS_TEST_ASSERT_MSG_EQ (mmu->GetReservedBytes (), 16u * 11250 + 4u * 30804, "reserved");
        NS_TEST_ASSERT_MSG_EQ (mmu->GetSizeBytes (), 1040496u, "pooled port buffers + PFC's");
        // Dynamic XOFF with an empty buffer: Alpha x (size - reserved) = 737280 / 8.
        NS_TEST_ASSERT_MSG_EQ (mmu->GetXoffThresholdBytes (), 92160u, "dynamic threshold");
        Simulator::Destroy ();
    }
};

/**
 * PFC's head-of-line blocking: one spine; hosts 16 and 17 (rack 1) send an incast of 200
 * frames each to host 0 (rack 0), and the victim, host 18 (rack 1), sends 100 frames to
 * host 1 (rack 0), whose link is idle.  All three share only the rack-1 uplink and the
 * spine's link to rack 0, at 160 Gbps with 120 Gbps offered: lossy, the victim is barely
 * slowed (its frames queue behind at most a few incast frames at 160 Gbps).  Lossless, the
 * ToR of rack 0 pauses the spine's port (class 0, the only class) once host 0's port backs
 * up, so the victim's frames wait behind the incast's: its last frame arrives more than
 * twice as late (measured: 31.5 us lossy, 67.6 us lossless).
 */
class VictimFlowTestCase : public TestCase
{
  public:
    VictimFlowTestCase ()
          : TestCase ("PFC head-of-line blocking: a victim sharing only upstream links is "
                      "slowed with PFC, not without")
    {
    }

  private:
    Time VictimLastArrival (bool lossless)
    {
        Ptr<ClosTopology> clos = BuildFabric (
            {{"Fabric", lossless ? "lossless" : "lossy"}, {"Spines", "1"}},
            {{"XoffBytes", "6000"}, {"ReserveBytes", "0"}});
        Arrivals victim;
        victim.Listen (clos, 1);
        Arrivals incast;
        incast.Listen (clos, 0);
        SendFrames (clos, 16, 0, 200);
        SendFrames (clos, 17, 0, 200);
        SendFrames (clos, 18, 1, 100);
        Simulator::Run ();
        NS_TEST_EXPECT_MSG_EQ (victim.total, 100u, "the victim's frames all arrive");
        if (lossless)
        {
            NS_TEST_EXPECT_MSG_EQ (clos->GetSwitchPortDrops (), 0u, "lossless");
            NS_TEST_EXPECT_MSG_EQ (incast.total, 400u, "the incast's frames all arrive");
        }
        const Time last = victim.bySource[18].back ();
        Simulator::Destroy ();
        return last;
    }

    void DoRun () override
    {
        // Alone, the victim's 100 frames leave host 18 in 30 us and its last frame arrives
        // 30 us + the path: under 32 us.
        const Time lossy = VictimLastArrival (false);
        const Time lossless = VictimLastArrival (true);
        NS_TEST_ASSERT_MSG_LT (lossy, MicroSeconds (32), "not slowed without PFC");
        // With PFC the spine's port to rack 0 stops for host 0's backlog: the incast's 400
        // frames drain at 40 Gbps in 120 us, and the victim waits with them.
        NS_TEST_ASSERT_MSG_GT (lossless, 2 * lossy, "slowed with PFC");
    }
};

/**
 * Deadlock detection: the ToR's port to host 0 is paused and never resumed (a stand-in for a
 * cyclic buffer dependency); hosts 1 and 2 send 3 frames each to host 0.  As in the 2-sender
 * case the ToR pauses both hosts, received at 592.8 ns, which arms the monitor; by the check
 * one DeadlockTimeout (1 ms) later no port has sent a data frame (only refreshed pauses), so
 * the run stops at 1,000,592.8 ns and the report names the three waiting ports and the two
 * ToR ingresses that hold their pauses (3000 B each).
 */
class DeadlockTestCase : public TestCase
{
  public:
    DeadlockTestCase ()
          : TestCase ("PFC deadlock: nothing moves for 1 ms while frames wait: stop at "
                      "1000592.8 ns, naming the waiting ports")
    {
    }

  private:
    void DoRun () override
    {
        Ptr<ClosTopology> clos =
            BuildFabric ({{"Fabric", "lossless"}},
                         {{"XoffBytes", "3000"}, {"ReserveBytes", "0"}, {"XonOffsetBytes", "3000"}});
        clos->GetTor (0)->GetPort (0)->Pause (0);
        SendFrames (clos, 1, 0, 3);
        SendFrames (clos, 2, 0, 3);
        Simulator::Run ();
        Ptr<PfcMonitor> monitor = clos->GetPfcMonitor ();
        NS_TEST_ASSERT_MSG_EQ (monitor->IsDeadlocked (), true, "detected");
        NS_TEST_ASSERT_MSG_EQ (Simulator::Now (), PicoSeconds (1000592800), "one timeout later");
        // Nodes 0..143 are hosts, 144 is ToR 0.
        const std::string expected =
            "host node 1 (paused classes 0x1, 1 frames) waits on switch node 144 port 1\n"
            "host node 2 (paused classes 0x1, 1 frames) waits on switch node 144 port 2\n"
            "switch node 144 port 0 (paused classes 0x1, 4 frames) waits on host node 0\n"
            "switch node 144 port 1 pauses class 0 upstream holding 3000 bytes\n"
            "switch node 144 port 2 pauses class 0 upstream holding 3000 bytes\n";
        NS_TEST_ASSERT_MSG_EQ (monitor->GetDeadlockReport (), expected, "who waits on whom");
        NS_TEST_ASSERT_MSG_EQ (monitor->GetLongestPauseChain (), 1u, "one hop of pause");
        Simulator::Destroy ();
    }
};

/**
 * RED-ECN at the egress with Kmin = 3000 B, Kmax = 4500 B, Pmax = 1: 6 ECT frames of 1500 wire
 * B into the ToR's port to host 0, paused so that it holds them, arrive at occupancies 0, 1500,
 * 3000 (<= Kmin: unmarked), 4500 (probability Pmax (4500 - 3000) / 1500 = 1: marked), 6000
 * and 7500 (> Kmax: marked): 3 marks, whatever the random draws, on frames 3, 4, 5.  Not-ECT
 * frames: none.  With EcnAtDequeue (HPCC's simulator) RED reads the bytes left behind each
 * frame as it leaves: 7500, 6000, 4500 (marked), 3000, 1500, 0: 3 marks on frames 0, 1, 2.
 */
class RedEcnTestCase : public TestCase
{
  public:
    RedEcnTestCase (bool ect, bool atDequeue = false)
          : TestCase (std::string ("RED-ECN at the egress, Kmin 3000, Kmax 4500: ") +
                      (!ect         ? "not-ECT frames never marked"
                       : atDequeue ? "at dequeue, frames 0-2 of 6 marked"
                                    : "3 of 6 ECT frames marked, frames 3-5"))
          , m_ect (ect)
          , m_atDequeue (atDequeue)
    {
    }

  private:
    void OnMark (const FabricQueueItem& item, uint32_t /* bytes */)
    {
        m_marked.push_back (item.packet->GetUid ());
    }

    void DoRun () override
    {
        Ptr<ClosTopology> clos = BuildFabric (
            {{"Fabric", "lossless"}},
            {{"EcnKminBytes", "3000"}, {"EcnKmaxBytes", "4500"}, {"EcnPmax", "1"},
             {"EcnAtDequeue", m_atDequeue ? "true" : "false"}});
        Ptr<FabricNetDevice> toHost0 = clos->GetTor (0)->GetPort (0);
        toHost0->GetQueue ()->TraceConnectWithoutContext (
            "Mark", MakeCallback (&RedEcnTestCase::OnMark, this));
        toHost0->Pause (0);
        std::vector<uint64_t> uids;
        for (uint32_t i = 0; i < 6; ++i)
        {
            FabricHeader header;
            header.srcHost = 1;
            header.dstHost = 0;
            header.payloadBytes = kPayload;
            header.ecn = m_ect ? FabricEcn::ECT0 : FabricEcn::NOT_ECT;
            Ptr<Packet> packet = Create<Packet> (kPayload);
            uids.push_back (packet->GetUid ());
            clos->GetHostDevice (1)->SendFabric (packet, header);
        }
        Simulator::Schedule (MicroSeconds (5), [toHost0] () { toHost0->Resume (0); });
        Simulator::Run ();
        NS_TEST_ASSERT_MSG_EQ (toHost0->GetQueue ()->GetMarkedPackets (), m_ect ? 3u : 0u,
                               "CE marks");
        std::vector<uint64_t> expected;
        if (m_ect)
        {
            expected.assign (uids.begin () + (m_atDequeue ? 0 : 3),
                             uids.begin () + (m_atDequeue ? 3 : 6));
        }
        NS_TEST_ASSERT_MSG_EQ ((m_marked == expected), true, "which frames are marked");
        Simulator::Destroy ();
    }

    bool m_ect;
    bool m_atDequeue;
    std::vector<uint64_t> m_marked;
};

/**
 * RED-ECN thresholds per port by link rate (EcnReferenceRate; HPCC's simulator's KMIN_MAP /
 * KMAX_MAP, Kmin 400 KB and Kmax 1600 KB at 100 Gb/s, 4x at 400 Gb/s).  A Clos of 100 Gb/s
 * host links and 400 Gb/s uplinks (SpineRateFactor 4); Kmin = 3000 B, Kmax = 3375 B, Pmax = 1
 * at 100 Gb/s.  A 400 Gb/s uplink then marks at 12000 B and 13500 B (x 400 / 100), a 100 Gb/s
 * host port at 3000 B and 3375 B.  The ToR's egress port \p port (0: to host 0, 100 Gb/s;
 * 16: uplink to spine 0, 400 Gb/s) is paused and host 1 sends it \p frames ECT frames of
 * 1500 wire B (to host 0, or to host 16 with flow hash 0, which takes uplink 16), so frame i
 * arrives at an occupancy of 1500 i bytes and is marked iff 1500 i > Kmin (the first
 * occupancy above Kmin, 1500 (floor (Kmin / 1500) + 1), is >= Kmax, where Pmax
 * (q - Kmin) / (Kmax - Kmin) >= 1: no random draw decides).  Uplink, 12 frames: per rate,
 * 1500 i > 12000 for i = 9, 10, 11 (3 marks); with one setting for every port (the default),
 * 1500 i > 3000 for i = 3..11 (9 marks).  Host port, 6 frames, per rate: i = 3, 4, 5 (3 marks,
 * as RedEcnTestCase: a port at the reference rate keeps Kmin and Kmax).
 */
class RedEcnPerRateTestCase : public TestCase
{
  public:
    RedEcnPerRateTestCase (bool perRate, uint32_t port, uint32_t frames,
                           std::vector<uint32_t> marked)
          : TestCase (std::string ("RED-ECN ") + (perRate ? "per link rate" : "one setting") +
                      ", port " + std::to_string (port) + " at " +
                      (port == 0 ? "100" : "400") + " Gbps: " + std::to_string (marked.size ()) +
                      " of " + std::to_string (frames) + " frames marked")
          , m_perRate (perRate)
          , m_port (port)
          , m_frames (frames)
          , m_expected (std::move (marked))
    {
    }

  private:
    void OnMark (const FabricQueueItem& item, uint32_t /* bytes */)
    {
        m_marked.push_back (item.packet->GetUid ());
    }

    void DoRun () override
    {
        std::map<std::string, std::string> mmu{
            {"EcnKminBytes", "3000"}, {"EcnKmaxBytes", "3375"}, {"EcnPmax", "1"}};
        if (m_perRate)
        {
            mmu["EcnReferenceRate"] = "100Gbps";
        }
        Ptr<ClosTopology> clos = BuildFabric (
            {{"Fabric", "lossless"}, {"AccessRate", "100Gbps"}, {"SpineRateFactor", "4"}}, mmu);
        Ptr<SwitchMmu> tor = DynamicCast<SwitchMmu> (clos->GetTor (0)->GetSharedBuffer ());
        const uint64_t factor = m_perRate && m_port == 16 ? 4 : 1;
        NS_TEST_ASSERT_MSG_EQ (tor->GetEcnKminBytes (m_port), 3000 * factor, "Kmin x R / 100G");
        NS_TEST_ASSERT_MSG_EQ (tor->GetEcnKmaxBytes (m_port), 3375 * factor, "Kmax x R / 100G");
        Ptr<FabricNetDevice> egress = clos->GetTor (0)->GetPort (m_port);
        egress->GetQueue ()->TraceConnectWithoutContext (
            "Mark", MakeCallback (&RedEcnPerRateTestCase::OnMark, this));
        egress->Pause (0);
        std::vector<uint64_t> uids;
        for (uint32_t i = 0; i < m_frames; ++i)
        {
            FabricHeader header;
            header.srcHost = 1;
            header.dstHost = m_port == 0 ? 0 : 16;
            header.flowHash = 0;
            header.payloadBytes = kPayload;
            header.ecn = FabricEcn::ECT0;
            Ptr<Packet> packet = Create<Packet> (kPayload);
            uids.push_back (packet->GetUid ());
            clos->GetHostDevice (1)->SendFabric (packet, header);
        }
        Simulator::Schedule (MicroSeconds (5), [egress] () { egress->Resume (0); });
        Simulator::Run ();
        std::vector<uint64_t> expected;
        for (uint32_t i : m_expected)
        {
            expected.push_back (uids.at (i));
        }
        NS_TEST_ASSERT_MSG_EQ (egress->GetQueue ()->GetMarkedPackets (), m_expected.size (),
                               "CE marks");
        NS_TEST_ASSERT_MSG_EQ ((m_marked == expected), true, "which frames are marked");
        Simulator::Destroy ();
    }

    bool m_perRate;
    uint32_t m_port;
    uint32_t m_frames;
    std::vector<uint32_t> m_expected;
    std::vector<uint64_t> m_marked;
};

/**
 * Headroom when the pause frame waits behind a frame from a slower port (regression: before
 * the headroom counted it, this case dropped 1 frame, as roce-none and roce-dcqcn did on the
 * 144-host Clos, bench/RESULTS.md).  Static XOFF 4500 B, reserve 0; the ToR's port to host 0
 * is paused until 20 us.  Hosts 16, 32, ..., 128 (racks 1..8) send 10 frames each (1500 wire
 * B) to host 0 at t = 0, all by spine 0 (flow hash 0): each reaches its ToR at 20 + 240 ns,
 * leaves its uplink at 260 + (300 - 75) = 485 ns (a 40 Gbps frame into a 160 Gbps port
 * starts txIn - txOut later), reaches spine 0 at 485 + 200 + 240 = 925 ns, and the spine
 * sends frame j (j = 0, 1, ...) to ToR 0 at 925 + 75 j ns, admitted by ToR 0's uplink
 * ingress 16 at 1365 + 75 j ns.  Frame 2 (1515 ns) brings it to 4500 B = XOFF: XOFF.
 * Meanwhile host 1 (rack 0) sends 10 frames to host 16 from 54 ns (flow hash 0: ToR 0's
 * uplink 16): ToR 0 takes frame k at 314 + 300 k ns and holds port 16 until 614 + 300 k
 * (225 ns idle + 75 ns on the wire), so the XOFF waits behind frame 4 (taken 1514 ns) until
 * 1814 ns: 299 ns, not the 75 ns of a maximum frame at 160 Gbps.  Spine 0 gets it at
 * 1814 + 200 + 240 = 2254 ns, during frame 17 (2200..2275 ns), and stops after it.  Frames
 * 3..17 land in the headroom: 15 x 1500 = 22500 B, over the 22154 B of the old headroom
 * (3 x 1518 + 20 B/ns x 880 ns; frame 17 was dropped) and under the derived 26708 B
 * (2 x 1518 + 1518 x 160/40 + 17600).  So: 0 drops, every frame arrives, ingress 16 peaks at
 * 4500 + 22500 = 27000 B <= XOFF + headroom.
 */
class SlowIngressHeadroomTestCase : public TestCase
{
  public:
    SlowIngressHeadroomTestCase ()
          : TestCase ("headroom covers the pause waiting 299 ns behind a 40 Gbps frame: "
                      "22500 B of headroom used, 0 drops")
    {
    }

  private:
    void DoRun () override
    {
        Ptr<ClosTopology> clos = BuildFabric ({{"Fabric", "lossless"}},
                                              {{"XoffBytes", "4500"}, {"ReserveBytes", "0"}});
        Ptr<FabricSwitch> tor = clos->GetTor (0);
        Ptr<SwitchMmu> mmu = DynamicCast<SwitchMmu> (tor->GetSharedBuffer ());
        NS_TEST_ASSERT_MSG_EQ (mmu->GetHeadroomBytes (16), 26708u, "uplink headroom");
        Arrivals toHost0;
        toHost0.Listen (clos, 0);
        Arrivals toHost16;
        toHost16.Listen (clos, 16);
        Ptr<FabricNetDevice> port0 = tor->GetPort (0);
        port0->Pause (0);
        for (uint32_t rack = 1; rack <= 8; ++rack)
        {
            SendFrames (clos, rack * 16, 0, 10, 0); // flow hash 0: uplink 16, spine 0
        }
        Simulator::Schedule (NanoSeconds (54), &SendFrames, clos, 1u, 16u, 10u, 0u);
        Simulator::Schedule (MicroSeconds (20), [port0] () { port0->Resume (0); });
        Simulator::Run ();
        NS_TEST_ASSERT_MSG_EQ (clos->GetSwitchPortDrops (), 0u, "no drop");
        NS_TEST_ASSERT_MSG_EQ (toHost0.total, 80u, "every incast frame arrives");
        NS_TEST_ASSERT_MSG_EQ (toHost16.total, 10u, "host 1's frames arrive");
        NS_TEST_ASSERT_MSG_EQ (mmu->GetPeakHeadroomBytes (16, 0), 22500u, "frames 3..17");
        NS_TEST_ASSERT_MSG_EQ (mmu->GetPeakIngressBytes (16, 0), 27000u, "XOFF + 22500");
        NS_TEST_ASSERT_MSG_LT_OR_EQ (mmu->GetPeakIngressBytes (16, 0),
                                     4500 + mmu->GetHeadroomBytes (16), "XOFF + headroom");
        Simulator::Destroy ();
    }
};

class LosslessTestSuite : public TestSuite
{
  public:
    LosslessTestSuite ()
          : TestSuite ("disaggsim-lossless", UNIT)
    {
        AddTestCase (new HeadroomTestCase, TestCase::QUICK);
        AddTestCase (new TwoSenderPfcTestCase, TestCase::QUICK);
        AddTestCase (new SlowIngressHeadroomTestCase, TestCase::QUICK);
        AddTestCase (new IncastTestCase (false), TestCase::QUICK);
        AddTestCase (new IncastTestCase (true), TestCase::QUICK);
        AddTestCase (new VictimFlowTestCase, TestCase::QUICK);
        AddTestCase (new DeadlockTestCase, TestCase::QUICK);
        AddTestCase (new RedEcnTestCase (true), TestCase::QUICK);
        AddTestCase (new RedEcnTestCase (false), TestCase::QUICK);
        AddTestCase (new RedEcnTestCase (true, true), TestCase::QUICK);
        AddTestCase (new RedEcnPerRateTestCase (true, 16, 12, {9, 10, 11}), TestCase::QUICK);
        AddTestCase (new RedEcnPerRateTestCase (false, 16, 12, {3, 4, 5, 6, 7, 8, 9, 10, 11}),
                     TestCase::QUICK);
        AddTestCase (new RedEcnPerRateTestCase (true, 0, 6, {3, 4, 5}), TestCase::QUICK);
    }
};

static LosslessTestSuite g_losslessTestSuite;
