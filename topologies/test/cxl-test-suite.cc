/*
 * disaggsim: the CXL rack tier (topologies/model/cxl-rack-tier.h, topologies/doc/cxl.md)
 * against hand-derived times.
 *
 * Fabric: 2 racks x 4 hosts, 2 spines (4x uplinks), 40 Gbps access links, the OSDI'16
 * cables and switching delay (Table 4: 4 m and 40 m at 5 ns/m, 240 ns); the inner transport
 * is pFabric (22 B header, starts at line rate: a lone flow takes exactly its ideal FCT, the
 * conformance suite).  CXL: 140 ns load/store latency, 256 Gbps links (the defaults), so a
 * 64 B access moves in 64 x 8 / 256 = 2 ns and a lone one takes 142 ns.
 *
 * 1. A lone 64 B access in a rack (host 1 writes to its rack's pool) completes in exactly
 *    140 + 2 = 142 ns, and no Ethernet frame is sent.
 * 2. A lone 64 B access across racks (host 1 -> rack 1) takes the CXL access at each end
 *    plus pFabric's one 64 + 22 + 18 = 104 B frame from daemon 0 to daemon 4:
 *    104 x 8 / 40 = 20.8 ns serialization + 2 x 20 ns host cables + 2 x 200 ns spine cables
 *    + 3 x 240 ns switches + 20.8 x (1 - 1/4) = 15.6 ns re-serialization = 1196.4 ns, so
 *    142 + 1196.4 + 142 = 1480.4 ns; only the daemons' NICs send frames.
 * 3. Two 64 B accesses of host 1 at the same time share its link: 142 and 144 ns; host 2's
 *    at the same time has its own link: 142 ns.
 * 4. DaemonDelay 100 ns and the daemon on host index 1: 142 + 100 + 1196.4 + 100 + 142 =
 *    1680.4 ns (daemons 1 and 5; the fabric path between them is the same length).
 */
#include "topologies/model/clos-topology.h"
#include "topologies/model/cxl-rack-tier.h"
#include "topologies/model/fabric-header.h"

#include "ns3/config.h"
#include "ns3/data-rate.h"
#include "ns3/simulator.h"
#include "ns3/test.h"
#include "ns3/uinteger.h"

#include <map>

using namespace ns3;

namespace
{

struct CxlBench
{
    Ptr<ClosTopology> topology;
    Ptr<CxlRackTier> tier;
    std::map<uint64_t, Time> finish;
    std::map<uint32_t, uint64_t> framesSent; //!< per source host

    explicit CxlBench (Time daemonDelay = Time (0), uint32_t daemonIndex = 0)
    {
        const FlowTransportRegistry::Entry* entry = FlowTransportRegistry::Find ("pfabric");
        NS_ABORT_MSG_IF (entry == nullptr, "pfabric is not registered");
        entry->setDefaults ();
        topology = CreateObject<ClosTopology> ();
        topology->SetAttribute ("Racks", UintegerValue (2));
        topology->SetAttribute ("HostsPerRack", UintegerValue (4));
        topology->SetAttribute ("Spines", UintegerValue (2));
        topology->SetAttribute ("AccessRate", DataRateValue (DataRate ("40Gbps")));
        tier = CreateObject<CxlRackTier> ();
        tier->SetAttribute ("DaemonDelay", TimeValue (daemonDelay));
        tier->SetAttribute ("DaemonHostIndex", UintegerValue (daemonIndex));
        tier->SetInnerTransport (entry->create ());
        tier->ConfigureFabric (topology);
        topology->Build ();
        tier->Install (topology);
        tier->TraceConnectWithoutContext ("FlowFinished",
                                          MakeCallback (&CxlBench::OnFinished, this));
        for (uint32_t h = 0; h < topology->GetNHosts (); ++h)
        {
            topology->GetHostDevice (h)->TraceConnectWithoutContext (
                "Tx", MakeCallback (&CxlBench::OnTx, this));
        }
    }

    void OnFinished (uint64_t flowId, Time at)
    {
        finish[flowId] = at;
    }

    void OnTx (Ptr<const Packet> packet, const FabricHeader& frame)
    {
        ++framesSent[frame.srcHost];
    }

    /// Run to the end; \returns the trace origin.
    Time Run ()
    {
        const Time origin = tier->GetTraceOrigin ();
        Simulator::Run ();
        return origin;
    }

    uint64_t Frames () const
    {
        uint64_t n = 0;
        for (const auto& [host, count] : framesSent)
        {
            n += count;
        }
        return n;
    }
};

FlowSpec
Access (uint64_t id, uint32_t src, uint32_t dst, uint64_t bytes = 64, int64_t startNs = 1000)
{
    FlowSpec f;
    f.flowId = id;
    f.srcHost = src;
    f.dstHost = dst;
    f.sizeBytes = bytes;
    f.startNs = startNs;
    return f;
}

class InRackCase : public TestCase
{
  public:
    InRackCase ()
        : TestCase ("a lone 64 B in-rack access takes the CXL latency + 2 ns, no Ethernet")
    {
    }

  private:
    void DoRun () override
    {
        CxlBench b;
        b.tier->AddFlow (Access (7, 1, 0));
        const Time origin = b.Run ();
        NS_TEST_ASSERT_MSG_EQ (b.finish.count (7), 1, "the access finished");
        NS_TEST_ASSERT_MSG_EQ (b.finish[7] - origin - NanoSeconds (1000), PicoSeconds (142000),
                               "140 ns + 64 B at 256 Gbps");
        NS_TEST_ASSERT_MSG_EQ (b.Frames (), 0, "no frame on the Ethernet fabric");
        NS_TEST_ASSERT_MSG_EQ (b.tier->LoneAccessTime (Access (7, 1, 0)), PicoSeconds (142000),
                               "LoneAccessTime agrees");
        Simulator::Destroy ();
    }
};

class AcrossRacksCase : public TestCase
{
  public:
    AcrossRacksCase (Time daemonDelay, uint32_t daemonIndex, int64_t expectedPs)
        : TestCase ("a lone 64 B access across racks: CXL + daemons + fabric, daemon delay " +
                    std::to_string (daemonDelay.GetNanoSeconds ()) + " ns on host index " +
                    std::to_string (daemonIndex)),
          m_delay (daemonDelay),
          m_index (daemonIndex),
          m_expectedPs (expectedPs)
    {
    }

  private:
    void DoRun () override
    {
        CxlBench b (m_delay, m_index);
        b.tier->AddFlow (Access (3, 2, 6)); // host 2 (rack 0) -> the pool of rack 1
        const Time origin = b.Run ();
        NS_TEST_ASSERT_MSG_EQ (b.finish.count (3), 1, "the access finished");
        const Time fct = b.finish[3] - origin - NanoSeconds (1000);
        NS_TEST_ASSERT_MSG_EQ (fct, PicoSeconds (m_expectedPs), "hand-derived path");
        NS_TEST_ASSERT_MSG_EQ (b.tier->LoneAccessTime (Access (3, 2, 6)),
                               PicoSeconds (m_expectedPs), "LoneAccessTime agrees");
        NS_TEST_ASSERT_MSG_EQ (b.framesSent.count (2), 0, "the client sends no frame");
        NS_TEST_ASSERT_MSG_GT (b.framesSent[m_index], 0, "the source daemon sends the data");
        Simulator::Destroy ();
    }

    Time m_delay;
    uint32_t m_index;
    int64_t m_expectedPs;
};

class SharedLinkCase : public TestCase
{
  public:
    SharedLinkCase ()
        : TestCase ("accesses of one host share its CXL link; another host's do not")
    {
    }

  private:
    void DoRun () override
    {
        CxlBench b;
        b.tier->AddFlow (Access (1, 1, 0));
        b.tier->AddFlow (Access (2, 0, 1)); // a read: pool -> host 1, same link
        b.tier->AddFlow (Access (3, 2, 0));
        const Time origin = b.Run () + NanoSeconds (1000);
        NS_TEST_ASSERT_MSG_EQ (b.finish[1] - origin, PicoSeconds (142000), "first on the link");
        NS_TEST_ASSERT_MSG_EQ (b.finish[2] - origin, PicoSeconds (144000),
                               "waits 2 ns for the link");
        NS_TEST_ASSERT_MSG_EQ (b.finish[3] - origin, PicoSeconds (142000), "own link");
        Simulator::Destroy ();
    }
};

class CxlTierSuite : public TestSuite
{
  public:
    CxlTierSuite ()
        : TestSuite ("disaggsim-cxl", UNIT)
    {
        AddTestCase (new InRackCase (), TestCase::QUICK);
        AddTestCase (new AcrossRacksCase (Time (0), 0, 1480400), TestCase::QUICK);
        AddTestCase (new AcrossRacksCase (NanoSeconds (100), 1, 1680400), TestCase::QUICK);
        AddTestCase (new SharedLinkCase (), TestCase::QUICK);
    }
};

CxlTierSuite g_cxlTierSuite;

} // namespace
