/*
 * disaggsim: tests of TCP NewReno and DCTCP over the Clos fabric.
 * Every expected value is derived in the comment next to it.
 */
#include "topologies/helper/clos-helper.h"
#include "topologies/model/fabric-header.h"
#include "transports/tcp/helper/tcp-flow-transport.h"

#include "ns3/core-module.h"
#include "ns3/ipv4-header.h"
#include "ns3/object-vector.h"
#include "ns3/tcp-header.h"
#include "ns3/tcp-l4-protocol.h"
#include "ns3/test.h"

#include <algorithm>
#include <functional>

using namespace ns3;

namespace
{

/// A finished run: finish times in trace time (negative = unfinished), plus the fabric.
struct TcpRun
{
    std::vector<Time> finish;
    Ptr<ClosTopology> topology;
    Ptr<FlowTransport> transport;
};

/**
 * Run \p flows with transport \p protocol on the default (paper) Clos at \p accessRate.
 * \p overrides runs after the transport's defaults (Config::SetDefault calls);
 * \p onFinished(run, flow index) runs at each completion; \p beforeRun(run) runs once the
 * flows are added (to connect traces); the run stops \p runFor after trace time 0.  The
 * caller must call Simulator::Destroy() when done with the result.
 */
TcpRun
RunFlows (const std::string& protocol, const std::string& accessRate,
          const std::vector<FlowSpec>& flows, const std::function<void ()>& overrides = {},
          const std::function<void (TcpRun&, std::size_t)>& onFinished = {},
          const std::function<void (TcpRun&)>& beforeRun = {}, Time runFor = MilliSeconds (100))
{
    Config::Reset ();
    const FlowTransportRegistry::Entry* entry = FlowTransportRegistry::Find (protocol);
    NS_ABORT_UNLESS (entry != nullptr);
    entry->setDefaults ();
    if (overrides)
    {
        overrides ();
    }
    TcpRun run;
    ClosHelper clos;
    clos.SetTopologyAttribute ("AccessRate", DataRateValue (DataRate (accessRate)));
    run.transport = entry->create ();
    run.topology = clos.Install (run.transport);
    run.finish.assign (flows.size (), Seconds (-1));
    for (const FlowSpec& flow : flows)
    {
        run.transport->AddFlow (flow);
    }
    // After the last AddFlow: the warm-up is sized from the flows.
    const Time origin = run.transport->GetTraceOrigin ();
    std::function<void (uint64_t, Time)> record =
        [&run, &flows, origin, &onFinished] (uint64_t id, Time at)
    {
        for (std::size_t i = 0; i < flows.size (); ++i)
        {
            if (flows[i].flowId == id)
            {
                run.finish[i] = at - origin;
                if (onFinished)
                {
                    onFinished (run, i);
                }
            }
        }
    };
    run.transport->TraceConnectWithoutContext ("FlowFinished",
                                               Callback<void, uint64_t, Time> (record));
    if (beforeRun)
    {
        beforeRun (run);
    }
    Simulator::Stop (origin + runFor);
    Simulator::Run ();
    return run;
}

FlowSpec
Flow (uint64_t id, uint32_t src, uint32_t dst, uint64_t sizeBytes, int64_t startNs = 0)
{
    return FlowSpec{id, startNs, src, dst, sizeBytes};
}

/// Slowdown of flow \p i: (finish - start) / ideal, in exact picoseconds.
double
Slowdown (const TcpRun& run, const FlowSpec& flow, std::size_t i)
{
    Time ideal = run.topology->IdealFct (flow.srcHost, flow.dstHost, flow.sizeBytes,
                                         run.transport->GetPerPacketHeaderBytes (),
                                         run.transport->GetMssBytes ());
    return double ((run.finish[i] - NanoSeconds (flow.startNs)).GetPicoSeconds ()) /
           double (ideal.GetPicoSeconds ());
}

} // namespace

/// A flow alone in the network completes in exactly its ideal FCT.
class LoneFlowTestCase : public TestCase
{
  public:
    LoneFlowTestCase (const std::string& rate, uint32_t dst)
          : TestCase ("lone TCP flow slowdown = 1 +- 1e-6, " + rate + ", host 0 -> host " +
                      std::to_string (dst))
          , m_rate (rate)
          , m_dst (dst)
    {
    }

  private:
    void DoRun () override
    {
        // 1 B (one 59 B packet), one full segment, a 4 KB page (2 full + 1176 B), 10 full
        // segments (= InitialCwnd 10, RFC 6928), and 1 MB with InitialCwnd raised to 1000
        // segments (685 segments of 1460 B + 1 of 400 B, all in the first window).  That window
        // leaves the host back to back, so for it the host NIC must hold 1 MB (unlimited, the
        // default; a 36 KB YAPS NIC holds 24 of its 686 frames).
        for (uint64_t size : {1ULL, 1460ULL, 4096ULL, 14600ULL, 1000000ULL})
        {
            std::vector<FlowSpec> flows = {Flow (7, 0, m_dst, size, 1000)};
            TcpRun run = RunFlows ("tcp-ns3", m_rate, flows,
                                   [size] ()
                                   {
                                       if (size > 14600)
                                       {
                                           Config::SetDefault ("ns3::TcpSocket::InitialCwnd",
                                                               UintegerValue (1000));
                                       }
                                   });
            NS_TEST_ASSERT_MSG_EQ (run.finish[0].IsPositive (), true, "flow finished");
            NS_TEST_ASSERT_MSG_EQ_TOL (Slowdown (run, flows[0], 0), 1.0, 1e-6,
                                       size << " B flow, " << m_rate);
            Simulator::Destroy ();
        }
    }

    std::string m_rate;
    uint32_t m_dst;
};

/// The hand-computed FCT of one lone TCP flow, end to end through ns-3's TCP.
class LoneFlowByHandTestCase : public TestCase
{
  public:
    LoneFlowByHandTestCase ()
          : TestCase ("lone 1460 B inter-rack TCP flow at 40 Gbps takes 1691.3 ns")
    {
    }

  private:
    void DoRun () override
    {
        std::vector<FlowSpec> flows = {Flow (1, 3, 40, 1460, 0)};
        TcpRun run = RunFlows ("tcp-ns3", "40Gbps", flows);
        // (1460 + 20 IPv4 + 20 TCP + 18 frame) B x 8 / 40 Gbps = 303.6 ns
        // + 2 x 20 ns (4 m host cables) + 2 x 200 ns (40 m spine cables)
        // + 3 x 240 ns (ToR, spine, ToR)
        // + 303.6 - 75.9 ns (store at the 4x-faster uplink, re-serialize at the last hop)
        // = 1691.3 ns.
        NS_TEST_ASSERT_MSG_EQ (run.finish[0].GetPicoSeconds (), int64_t (1691300), "FCT by hand");
        Simulator::Destroy ();
    }
};

/// Two equal flows into one receiver share its 40 Gbps port: each takes about 2x ideal.
class TwoFlowsTestCase : public TestCase
{
  public:
    TwoFlowsTestCase (const std::string& protocol, bool fair)
          : TestCase ("two 1 MB " + protocol +
                      " flows into one host: the later finishes at 2x "
                      "ideal +- 12%" +
                      (fair ? ", both do" : ""))
          , m_protocol (protocol)
          , m_fair (fair)
    {
    }

  private:
    void DoRun () override
    {
        // Hosts 1 and 2 -> host 0 (same rack): the ToR's port to host 0 is the bottleneck.
        // Together 2 MB must cross it, so the later flow can finish no earlier than ~2x the
        // ideal of one; with fair sharing both finish near 2x.  Tolerance: 12% for slow start
        // and the loss/marking transients.
        std::vector<FlowSpec> flows = {Flow (1, 1, 0, 1000000), Flow (2, 2, 0, 1000000)};
        TcpRun run = RunFlows (m_protocol, "40Gbps", flows);
        std::cout << m_protocol << " two flows: slowdowns " << Slowdown (run, flows[0], 0) << " "
                  << Slowdown (run, flows[1], 1) << std::endl;
        const double first = std::min (Slowdown (run, flows[0], 0), Slowdown (run, flows[1], 1));
        const double last = std::max (Slowdown (run, flows[0], 0), Slowdown (run, flows[1], 1));
        NS_TEST_ASSERT_MSG_EQ (run.finish[0].IsPositive () && run.finish[1].IsPositive (), true,
                               "both finished");
        // Work conservation: the port drains 2 MB at line rate, so the later flow ends at
        // 2x ideal (the ideal includes one path latency, counted once here too).
        NS_TEST_ASSERT_MSG_EQ_TOL (last, 2.0, 0.24, "later flow");
        if (m_fair)
        {
            NS_TEST_ASSERT_MSG_EQ_TOL (first, 2.0, 0.24, "earlier flow (fair share)");
        }
        else
        {
            // NewReno over DropTail is not fair at this time scale: the slow-start overshoot
            // of the 36 KB buffer costs one flow at least one 200 us MinRto, about one ideal
            // FCT of 1 MB (208 us), while the other runs at line rate.  The winner shares the
            // port only outside that timeout, for at most (208 - 200) us of its bytes'
            // serialization, so it finishes by 1 + 8/208 = 1.04 ideal, plus the 12% slow-start
            // tolerance of the other cases: <= 1.16 (a fair split would give ~2).  Long flows
            // converge (TcpLongFlowsFairTestCase).
            NS_TEST_ASSERT_MSG_LT_OR_EQ (first, 1.0 + 8.0 / 208.0 + 0.12, "earlier flow");
        }
        Simulator::Destroy ();
    }

    std::string m_protocol;
    bool m_fair;
};

/**
 * Two 100 MB NewReno flows into one host, with the hosts' random send overhead of Floyd &
 * Jacobson 1992 (FabricNetDevice::SendOverhead = one bottleneck service time) and YAPS's
 * 36 KB host NICs (TcpFlowTransport::HostBufferBytes = 36864): AIMD has
 * ~40 ms (~200 MinRto) to converge, and both finish at about 2x ideal.  Without the overhead
 * the deterministic model phase-locks and one flow is locked out (tcp.md, "Two flows,
 * lockout and phase effects"); the seeds are the first two, not chosen.
 */
class TcpLongFlowsFairTestCase : public TestCase
{
  public:
    TcpLongFlowsFairTestCase (uint32_t seed)
          : TestCase ("two 100 MB tcp flows into one host with random send overhead (seed " +
                      std::to_string (seed) + "): both finish at 2x ideal +- 12%, the later +- 2%")
          , m_seed (seed)
    {
    }

  private:
    void DoRun () override
    {
        std::vector<FlowSpec> flows = {Flow (1, 1, 0, 100000000), Flow (2, 2, 0, 100000000)};
        const uint32_t seed = m_seed;
        TcpRun run = RunFlows ("tcp-ns3", "40Gbps", flows,
                               [seed] ()
                               {
                                   RngSeedManager::SetSeed (seed);
                                   // YAPS's host NIC (36 KB): unlimited, the winner's excess
                                   // window queues in its own NIC without loss and locks the
                                   // other flow out in 3 of 8 seeds (tcp.md).
                                   Config::SetDefault ("ns3::TcpFlowTransport::HostBufferBytes",
                                                       UintegerValue (36864));
                                   // One 1518 B frame at 40 Gbps: 1518 x 8 / 40e9 s = 303.6 ns.
                                   Config::SetDefault ("ns3::FabricNetDevice::SendOverhead",
                                                       TimeValue (PicoSeconds (303600)));
                               });
        const double a = Slowdown (run, flows[0], 0);
        const double b = Slowdown (run, flows[1], 1);
        std::cout << "tcp two 100 MB flows, send overhead, seed " << m_seed << ": slowdowns " << a
                  << " " << b << std::endl;
        NS_TEST_ASSERT_MSG_EQ (run.finish[0].IsPositive () && run.finish[1].IsPositive (), true,
                               "both finished");
        // Work conservation over 40 ms: the later flow ends at 2x ideal; 2% allows 0.8 ms of
        // idle bottleneck (a few RTO waits).
        NS_TEST_ASSERT_MSG_EQ_TOL (std::max (a, b), 2.0, 0.04, "later flow");
        // Fair share: the earlier one too (measured over seeds 1-12: 1.82-1.97).
        NS_TEST_ASSERT_MSG_EQ_TOL (std::min (a, b), 2.0, 0.24, "earlier flow (fair share)");
        Simulator::Destroy ();
        RngSeedManager::SetSeed (1);
    }

    uint32_t m_seed;
};

/// Incast: DCTCP keeps the bottleneck queue near K, TCP fills the 36 KB buffer and drops.
class IncastTestCase : public TestCase
{
  public:
    IncastTestCase ()
          : TestCase ("incast 8 -> 1: DCTCP marks above K, queue far below TCP's; TCP drops")
    {
    }

  private:
    struct QueueStats
    {
        double meanBytes{0};
        uint32_t peakBytes{0};
        uint64_t drops{0};
        uint64_t marks{0};
        uint32_t minMarkedOccupancy{UINT32_MAX};
        uint32_t markThreshold{0};
    };

    static void Marked (QueueStats* stats, const FabricQueueItem& item, uint32_t bytesBefore)
    {
        stats->minMarkedOccupancy = std::min (stats->minMarkedOccupancy, bytesBefore);
    }

    QueueStats RunIncast (const std::string& protocol)
    {
        // Hosts 1..8 send 1 MB each to host 0 at t = 0.
        std::vector<FlowSpec> flows;
        for (uint32_t s = 1; s <= 8; ++s)
        {
            flows.push_back (Flow (s, s, 0, 1000000));
        }
        QueueStats stats;
        Ptr<FabricQueue> bottleneck;
        bool measured = false;
        auto onFinished = [&] (TcpRun& run, std::size_t)
        {
            if (!measured)
            {
                // Steady state: from 100 us (after the initial windows' burst) to the first
                // completion, while all 8 flows are active.
                measured = true;
                stats.meanBytes = bottleneck->GetMeanBytes ();
                stats.peakBytes = bottleneck->GetPeakBytes ();
                stats.drops = bottleneck->GetDroppedPackets ();
                stats.marks = bottleneck->GetMarkedPackets ();
            }
        };
        Config::Reset ();
        const FlowTransportRegistry::Entry* entry = FlowTransportRegistry::Find (protocol);
        entry->setDefaults ();
        ClosHelper clos;
        Ptr<FlowTransport> transport = entry->create ();
        Ptr<ClosTopology> topology = clos.Install (transport);
        // ToR 0's port 0 leads to host 0.
        bottleneck = topology->GetTor (0)->GetPort (0)->GetQueue ();
        bottleneck->TraceConnectWithoutContext ("Mark", MakeBoundCallback (&Marked, &stats));
        stats.markThreshold = DynamicCast<TcpFlowTransport> (transport)->GetMarkThresholdBytes ();
        for (const FlowSpec& flow : flows)
        {
            transport->AddFlow (flow);
        }
        const Time origin = transport->GetTraceOrigin ();
        Simulator::Schedule (origin + MicroSeconds (100), &FabricQueue::ResetStatistics,
                             bottleneck);
        TcpRun run{{}, topology, transport};
        std::function<void (uint64_t, Time)> record = [&] (uint64_t id, Time at)
        { onFinished (run, 0); };
        transport->TraceConnectWithoutContext ("FlowFinished",
                                               Callback<void, uint64_t, Time> (record));
        Simulator::Stop (origin + MilliSeconds (100));
        Simulator::Run ();
        NS_ABORT_UNLESS (measured);
        Simulator::Destroy ();
        return stats;
    }

    void DoRun () override
    {
        QueueStats tcp = RunIncast ("tcp-ns3");
        QueueStats dctcp = RunIncast ("dctcp-ns3");
        std::cout << "incast steady state: TCP mean " << tcp.meanBytes << " B peak "
                  << tcp.peakBytes << " B drops " << tcp.drops << "; DCTCP mean " << dctcp.meanBytes
                  << " B peak " << dctcp.peakBytes << " B marks " << dctcp.marks << " drops "
                  << dctcp.drops << " K " << dctcp.markThreshold << " B" << std::endl;
        // K at 40 Gbps: base inter-rack RTT = 1691.3 ns (data) + 1180.3 ns (58 B ACK) =
        // 2871.6 ns; C x RTT = 40e9 x 2871.6e-9 / 8 = 14358 B; / 7 = 2051 B -> 2 packets of
        // 1518 B = 3036 B.
        NS_TEST_ASSERT_MSG_EQ (dctcp.markThreshold, 3036u, "K");
        NS_TEST_ASSERT_MSG_EQ (tcp.marks, 0u, "TCP: no marking");
        NS_TEST_ASSERT_MSG_GT (dctcp.marks, 0u, "DCTCP marks");
        NS_TEST_ASSERT_MSG_GT (dctcp.minMarkedOccupancy, dctcp.markThreshold, "marks only above K");
        // TCP fills the buffer: its peak is within one 1518 B frame of 36864 B, and it drops.
        NS_TEST_ASSERT_MSG_GT (tcp.peakBytes, 36864u - 1518u, "TCP fills the buffer");
        NS_TEST_ASSERT_MSG_GT (tcp.drops, 0u, "TCP drops");
        // DCTCP keeps the queue well below TCP's, without drops.  It cannot hold it at K = 2
        // packets here: 8 flows at ns-3's minimum window of 2 segments keep 16 segments in
        // flight against a base BDP of ~10 (14358 B / 1460 B), so several packets stay queued
        // (measured: mean ~7.6 KB, peak ~22.8 KB vs TCP's ~30.1 KB and 36.4 KB).  Bounds: mean
        // below a third of TCP's, peak below three quarters of the buffer.
        NS_TEST_ASSERT_MSG_EQ (dctcp.drops, 0u, "DCTCP: no steady-state drops");
        NS_TEST_ASSERT_MSG_LT (dctcp.meanBytes, tcp.meanBytes / 3, "DCTCP mean queue");
        NS_TEST_ASSERT_MSG_LT (dctcp.peakBytes, 36864u * 3 / 4, "DCTCP peak queue");
    }
};

/// DCTCP's marking threshold from the §3.4 rule, for the two access rates of the paper.
class DctcpThresholdTestCase : public TestCase
{
  public:
    DctcpThresholdTestCase ()
          : TestCase (
                "DCTCP K = ceil(C x RTT over 7) packets: 3036 B at 40 Gbps, 4554 B at 100 Gbps")
    {
    }

  private:
    void DoRun () override
    {
        Ptr<ClosTopology> clos = CreateObject<ClosTopology> ();
        // 40 Gbps: RTT = 1691.3 ns (1518 B data, see IdealFct) + 1180.3 ns (58 B ACK:
        // 11.6 + 1160 + 8.7) = 2871.6 ns; 40e9 x 2871.6e-9 / 8 / 7 = 2051 B -> 2 x 1518 B.
        NS_TEST_ASSERT_MSG_EQ (TcpFlowTransport::DctcpMarkThresholdBytes (clos, 1460), 3036u,
                               "40G");
        // 100 Gbps: RTT = 1372.52 + 1168.12 = 2540.64 ns; 100e9 x 2540.64e-9 / 8 / 7 =
        // 4537 B -> 3 x 1518 B.
        clos->SetAttribute ("AccessRate", DataRateValue (DataRate ("100Gbps")));
        NS_TEST_ASSERT_MSG_EQ (TcpFlowTransport::DctcpMarkThresholdBytes (clos, 1460), 4554u,
                               "100G");
    }
};

/**
 * Connections are established before their flows start even when the data phase is loaded: a
 * 143 -> 1 incast of 64 KB flows at trace time 0 plus 1500 all-to-all flows of 1-200 KB
 * starting within 300 us (~8x the hosts' capacity over that window) on the 144-host fabric.
 * All starts are within OpenHorizon (5 ms), so every handshake is in the warm-up.
 * (With SYNs sent 100 us before each start, into the same queues as the data, 43-48 of 400
 * web-search flows at 40 Gbps were late at loads 0.1 and 0.5; transports/tcp/doc/tcp.md.)
 */
class NoLateConnectionTestCase : public TestCase
{
  public:
    NoLateConnectionTestCase (const std::string& protocol)
          : TestCase ("loaded 144-host run (" + protocol +
                      "): every connection established before its flow starts")
          , m_protocol (protocol)
    {
    }

  private:
    void DoRun () override
    {
        std::vector<FlowSpec> flows;
        for (uint32_t s = 1; s < 144; ++s)
        {
            flows.push_back (Flow (s, s, 0, 65536, 0));
        }
        Ptr<UniformRandomVariable> uniform = CreateObject<UniformRandomVariable> ();
        uniform->SetStream (7);
        for (uint64_t id = 1000; id < 2500; ++id)
        {
            const auto src = static_cast<uint32_t> (uniform->GetInteger (0, 143));
            auto dst = static_cast<uint32_t> (uniform->GetInteger (0, 142));
            dst += dst >= src ? 1 : 0;
            flows.push_back (Flow (id, src, dst, uniform->GetInteger (1, 200000),
                                   uniform->GetInteger (0, 300000)));
        }
        TcpRun run = RunFlows (m_protocol, "40Gbps", flows);
        Ptr<TcpFlowTransport> tcp = DynamicCast<TcpFlowTransport> (run.transport);
        uint64_t drops = 0;
        for (uint32_t t = 0; t < run.topology->GetNRacks (); ++t)
        {
            for (uint32_t p = 0; p < run.topology->GetTor (t)->GetNPorts (); ++p)
            {
                drops += run.topology->GetTor (t)->GetPort (p)->GetQueue ()->GetDroppedPackets ();
            }
        }
        std::size_t finished = 0;
        for (const Time& t : run.finish)
        {
            finished += t.IsPositive () ? 1 : 0;
        }
        std::cout << m_protocol << " loaded run: " << flows.size () << " flows, warm-up "
                  << run.transport->GetTraceOrigin ().As (Time::US) << ", ToR drops " << drops
                  << ", late " << tcp->GetLateConnections () << std::endl;
        NS_TEST_ASSERT_MSG_EQ (finished, flows.size (), "all flows finished");
        NS_TEST_ASSERT_MSG_EQ (tcp->GetLateConnections (), 0u, "no connection late");
        NS_TEST_ASSERT_MSG_EQ (tcp->GetWarmupConnections (), flows.size (), "all in the warm-up");
        if (m_protocol == "tcp-ns3")
        {
            // The data phase is loaded: the incast overflows the ToR's port to host 0.
            NS_TEST_ASSERT_MSG_GT (drops, 0u, "the run is loaded (TCP drops at ToR ports)");
        }
        // Host 0 takes part in the 143 incast handshakes, whose deadline round is
        // -5 ms / 10 us = -500, plus its share of the random ones (deadline rounds -500..-470),
        // at most 4 per round: its first round is at most -500 - (ceil(143 / 4) - 1) = -535.
        NS_TEST_ASSERT_MSG_GT_OR_EQ (run.transport->GetTraceOrigin (), MicroSeconds (5350),
                                     "warm-up >= OpenHorizon + 35 rounds");
        Simulator::Destroy ();
    }

    std::string m_protocol;
};

namespace
{

/// \returns 1 if \p item (a fabric frame) carries a TCP SYN, else 0.
uint32_t
IsSyn (const FabricQueueItem& item)
{
    Ptr<Packet> packet = item.packet->Copy ();
    Ipv4Header ipv4;
    TcpHeader tcp;
    packet->RemoveHeader (ipv4);
    packet->PeekHeader (tcp);
    return (tcp.GetFlags () & TcpHeader::SYN) != 0 ? 1 : 0;
}

} // namespace

/**
 * Handshakes during the run cross full queues: an 8 -> 1 TCP incast of 6 MB flows (48 MB,
 * ~9.7 ms at 40 Gbps) keeps host 0's ToR port full and dropping, and 100 one-segment flows
 * from other hosts into host 0 start at 5.5 ms + k x 40 us, so their SYNs (OpenHorizon =
 * 5 ms ahead) arrive at that port between 0.5 and 4.5 ms, behind ~30 KB of data (measured:
 * 98 of 100 behind more than half the 36 KB buffer).  Every handshake still completes before
 * its flow starts.  (The port drops ~1200 data frames but no SYN: a 66 B SYN still fits when
 * a 1518 B frame does not; a lost SYN would be resent after ConnTimeout = 1 ms, inside the
 * 5 ms horizon.)
 */
class HandshakeUnderLoadTestCase : public TestCase
{
  public:
    HandshakeUnderLoadTestCase ()
          : TestCase ("handshakes during a TCP incast cross the full port; no connection is late")
    {
    }

  private:
    /// Count the SYNs enqueued behind at least half of the 36 KB buffer.
    static void Enqueued (uint32_t* loadedSyns, const FabricQueueItem& item, uint32_t bytesBefore)
    {
        *loadedSyns += bytesBefore >= 36864 / 2 ? IsSyn (item) : 0;
    }

    void DoRun () override
    {
        std::vector<FlowSpec> flows;
        for (uint32_t s = 1; s <= 8; ++s)
        {
            flows.push_back (Flow (s, s, 0, 6000000, 0));
        }
        for (uint32_t k = 0; k < 100; ++k)
        {
            flows.push_back (Flow (100 + k, 9 + k, 0, 1460, 5500000 + int64_t (k) * 40000));
        }
        Ptr<FabricQueue> port;
        uint32_t loadedSyns = 0;
        TcpRun run = RunFlows ("tcp-ns3", "40Gbps", flows, {}, {},
                               [&port, &loadedSyns] (TcpRun& r)
                               {
                                   port = r.topology->GetTor (0)->GetPort (0)->GetQueue ();
                                   port->TraceConnectWithoutContext (
                                       "Enqueue", MakeBoundCallback (&Enqueued, &loadedSyns));
                               });
        Ptr<TcpFlowTransport> tcp = DynamicCast<TcpFlowTransport> (run.transport);
        std::cout << "handshakes under load: " << loadedSyns
                  << " SYNs behind >= 18 KB at host 0's port, drops there "
                  << port->GetDroppedPackets () << ", late " << tcp->GetLateConnections ()
                  << std::endl;
        const auto finished = std::count_if (run.finish.begin (), run.finish.end (),
                                             [] (Time t) { return t.IsPositive (); });
        NS_TEST_ASSERT_MSG_EQ (std::size_t (finished), flows.size (), "all flows finished");
        NS_TEST_ASSERT_MSG_GT (port->GetDroppedPackets (), 0u, "the port is full and drops");
        NS_TEST_ASSERT_MSG_GT_OR_EQ (loadedSyns, 90u, "SYNs wait behind a loaded queue");
        NS_TEST_ASSERT_MSG_EQ (tcp->GetLateConnections (), 0u, "no connection late");
        // Only the 8 incast flows start within 5 ms: the other 100 handshake during the run.
        NS_TEST_ASSERT_MSG_EQ (tcp->GetWarmupConnections (), 8u, "warm-up connections");
        Simulator::Destroy ();
    }
};

/**
 * The handshake schedule is as late as possible and staggered: 20 flows into host 0 all
 * starting at trace time 0 have deadline round -5 ms / 10 us = -500, and host 0 takes part in
 * at most 4 handshakes per round, so they take rounds -500..-504 and the first round, at
 * simulation time 0, is 504 x 10 us = 5.04 ms before trace time 0.
 */
class HandshakeScheduleTestCase : public TestCase
{
  public:
    HandshakeScheduleTestCase ()
          : TestCase ("20 -> 1 incast at trace time 0: handshake rounds -500..-504, warm-up "
                      "5.04 ms")
    {
    }

  private:
    void DoRun () override
    {
        std::vector<FlowSpec> flows;
        for (uint32_t s = 1; s <= 20; ++s)
        {
            flows.push_back (Flow (s, s, 0, 1460, 0));
        }
        TcpRun run = RunFlows ("tcp-ns3", "40Gbps", flows);
        Ptr<TcpFlowTransport> tcp = DynamicCast<TcpFlowTransport> (run.transport);
        NS_TEST_ASSERT_MSG_EQ (run.transport->GetTraceOrigin (), MicroSeconds (5040), "warm-up");
        NS_TEST_ASSERT_MSG_EQ (tcp->GetWarmupConnections (), 20u, "warm-up connections");
        NS_TEST_ASSERT_MSG_EQ (tcp->GetLateConnections (), 0u, "late");
        NS_TEST_ASSERT_MSG_EQ (tcp->GetPeakHostConnections (), 20u, "host 0: all 20 at once");
        std::size_t finished = 0;
        for (const Time& t : run.finish)
        {
            finished += t.IsPositive () ? 1 : 0;
        }
        NS_TEST_ASSERT_MSG_EQ (finished, flows.size (), "all flows finished");
        Simulator::Destroy ();
    }
};

/**
 * An idle established connection is undisturbed: 20 flows into host 0, one per ms, with
 * OpenHorizon = 20 ms, so each connection sits idle for 20 ms (>> MinRto 200 us, ConnTimeout
 * 1 ms) between its handshake and its flow.  No keepalive or idle restart disturbs it: the 10
 * segments go in the initial window and each flow takes exactly its ideal FCT.  The first
 * flow's deadline round is (1 ms - 20 ms) / 10 us = -1900: warm-up 19 ms.
 */
class IdleConnectionTestCase : public TestCase
{
  public:
    IdleConnectionTestCase ()
          : TestCase ("connections idle for 20 ms before their flows: slowdown 1, warm-up 19 ms")
    {
    }

  private:
    void DoRun () override
    {
        std::vector<FlowSpec> flows;
        for (uint32_t s = 1; s <= 20; ++s)
        {
            // Spread over 20 ms so that the flows never meet: each is alone in the fabric.
            flows.push_back (Flow (s, s, 0, 14600, int64_t (s) * 1000000));
        }
        TcpRun run = RunFlows ("tcp-ns3", "40Gbps", flows,
                               [] () {
                                   Config::SetDefault ("ns3::TcpFlowTransport::OpenHorizon",
                                                       TimeValue (MilliSeconds (20)));
                               });
        Ptr<TcpFlowTransport> tcp = DynamicCast<TcpFlowTransport> (run.transport);
        NS_TEST_ASSERT_MSG_EQ (run.transport->GetTraceOrigin (), MilliSeconds (19), "warm-up");
        // Flow 20's round is (20 ms - 20 ms) / 10 us = 0, at trace time 0: not in the warm-up.
        NS_TEST_ASSERT_MSG_EQ (tcp->GetWarmupConnections (), 19u, "warm-up connections");
        NS_TEST_ASSERT_MSG_EQ (tcp->GetLateConnections (), 0u, "late");
        for (std::size_t i = 0; i < flows.size (); ++i)
        {
            NS_TEST_ASSERT_MSG_EQ_TOL (Slowdown (run, flows[i], i), 1.0, 1e-6,
                                       "flow " << flows[i].flowId);
        }
        Simulator::Destroy ();
    }
};

/**
 * The sliding horizon bounds a host's open connections, as ns-3 itself counts them
 * (TcpL4Protocol's SocketList: every socket from its creation until its endpoint is freed).
 * Host 1 sends 300 one-segment flows to host 0, one every 100 us (30 ms).  Flow k's SYN
 * leaves in round (k x 100 us - 5 ms) / 10 us, i.e. 5 ms ahead, and it finishes ~1 us after
 * its start, so right after a round at most the 51 flows starting within the next 5 ms are
 * open (GetPeakHostConnections() = 51 exactly).  Each host also has its listener, and both
 * ends of a finished flow close (the receiver's Close() crosses the sender's FIN, so both go
 * through TIME_WAIT, 2 x MaxSegLifetime = 200 us): at most the flows of the last ~200 us, 3.
 * Opening every connection in a warm-up would hold all 300.  After the last flow, each host
 * has only its listener left.
 */
class SlidingHorizonTestCase : public TestCase
{
  public:
    SlidingHorizonTestCase ()
          : TestCase ("300 flows, one per 100 us: at most 51 connections open (5 ms horizon), "
                      "all closed at the end")
    {
    }

  private:
    static uint32_t Sockets (Ptr<Node> node)
    {
        ObjectVectorValue sockets;
        node->GetObject<TcpL4Protocol> ()->GetAttribute ("SocketList", sockets);
        return static_cast<uint32_t> (sockets.GetN ());
    }

    /// Every 2 us, keep the peak (a socket lives >= 200 us: TIME_WAIT).
    static void Sample (Ptr<Node> node, uint32_t* peak)
    {
        *peak = std::max (*peak, Sockets (node));
        Simulator::Schedule (MicroSeconds (2), &Sample, node, peak);
    }

    void DoRun () override
    {
        std::vector<FlowSpec> flows;
        for (uint32_t k = 0; k < 300; ++k)
        {
            flows.push_back (Flow (k, 1, 0, 1460, int64_t (k) * 100000));
        }
        uint32_t peakSender = 0;
        uint32_t peakReceiver = 0;
        // Stop 1 ms after the last start: its TIME_WAIT (200 us) is over.
        TcpRun run = RunFlows (
            "tcp-ns3", "40Gbps", flows, {}, {},
            [&peakSender, &peakReceiver] (TcpRun& r)
            {
                Sample (r.topology->GetHost (1), &peakSender);
                Sample (r.topology->GetHost (0), &peakReceiver);
            },
            MilliSeconds (31));
        Ptr<ClosTopology> topology = run.topology;
        Ptr<TcpFlowTransport> tcp = DynamicCast<TcpFlowTransport> (run.transport);
        std::cout << "sliding horizon: peak sockets sender " << peakSender << " receiver "
                  << peakReceiver << ", transport peak " << tcp->GetPeakHostConnections ()
                  << ", at the end " << Sockets (topology->GetHost (1)) << " / "
                  << Sockets (topology->GetHost (0)) << std::endl;
        NS_TEST_ASSERT_MSG_EQ (tcp->GetLateConnections (), 0u, "late");
        NS_TEST_ASSERT_MSG_EQ (tcp->GetWarmupConnections (), 50u, "flows 0..49 in the warm-up");
        NS_TEST_ASSERT_MSG_EQ (tcp->GetPeakHostConnections (), 51u, "transport's count");
        NS_TEST_ASSERT_MSG_GT_OR_EQ (peakSender, 1u + 51u, "sender: listener + the 51 opened");
        NS_TEST_ASSERT_MSG_LT_OR_EQ (peakSender, 1u + 51u + 3u, "sender: + at most 3 TIME_WAIT");
        NS_TEST_ASSERT_MSG_GT_OR_EQ (peakReceiver, 1u + 51u, "receiver: listener + 51");
        NS_TEST_ASSERT_MSG_LT_OR_EQ (peakReceiver, 1u + 51u + 3u, "receiver: + closing ones");
        NS_TEST_ASSERT_MSG_EQ (Sockets (topology->GetHost (1)), 1u, "sender: only its listener");
        NS_TEST_ASSERT_MSG_EQ (Sockets (topology->GetHost (0)), 1u, "receiver: only its listener");
        Simulator::Destroy ();
    }
};

class TcpTestSuite : public TestSuite
{
  public:
    TcpTestSuite ()
          : TestSuite ("disaggsim-tcp", SYSTEM)
    {
        AddTestCase (new LoneFlowByHandTestCase, TestCase::QUICK);
        AddTestCase (new DctcpThresholdTestCase, TestCase::QUICK);
        for (const char* rate : {"40Gbps", "100Gbps"})
        {
            AddTestCase (new LoneFlowTestCase (rate, 1), TestCase::QUICK);   // intra-rack
            AddTestCase (new LoneFlowTestCase (rate, 100), TestCase::QUICK); // inter-rack
        }
        AddTestCase (new TwoFlowsTestCase ("tcp-ns3", false), TestCase::QUICK);
        AddTestCase (new TwoFlowsTestCase ("dctcp-ns3", true), TestCase::QUICK);
        for (uint32_t seed : {1u, 2u})
        {
            AddTestCase (new TcpLongFlowsFairTestCase (seed), TestCase::QUICK);
        }
        AddTestCase (new IncastTestCase, TestCase::QUICK);
        AddTestCase (new HandshakeScheduleTestCase, TestCase::QUICK);
        AddTestCase (new IdleConnectionTestCase, TestCase::QUICK);
        AddTestCase (new SlidingHorizonTestCase, TestCase::QUICK);
        AddTestCase (new HandshakeUnderLoadTestCase, TestCase::QUICK);
        AddTestCase (new NoLateConnectionTestCase ("tcp-ns3"), TestCase::QUICK);
        AddTestCase (new NoLateConnectionTestCase ("dctcp-ns3"), TestCase::QUICK);
    }
};

static TcpTestSuite g_tcpTestSuite;
