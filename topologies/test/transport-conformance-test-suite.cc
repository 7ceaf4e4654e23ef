/*
 * disaggsim: the conformance suite every registered transport must pass (one suite, run over
 * FlowTransportRegistry::GetNames(), so a new transport is checked with no edit here).
 *
 * Fabric: ClosTopology with 2 racks x 4 hosts, 2 spines (4x uplinks), the paper's cables and
 * switching delay (OSDI'16 Table 4), at 40 and 100 Gbps access links.
 *
 * 1. A lone flow of 3 full packets + 100 B finishes exactly at ClosTopology::IdealFct
 *    plus the transport's declared FlowTransport::GetLoneFlowExtraDelay (0, i.e. slowdown 1,
 *    for every transport but the centralized Fastpass, whose request-allocation delay its
 *    own suite derives by hand), to 1e-9, within a rack (host 0 -> 1) and across racks
 *    (0 -> 4); and that FCT minus the extra delay equals the ideal FCT derived by hand
 *    (HandIdealFctNs, clos.md), which the flow-level Ideal does not compute.
 * 2. Four concurrent flows on disjoint host pairs (0->4, 1->5, 4->1, 5->0; no shared
 *    access link, uplinks 4x faster) lose nothing, so each flow's payload arrives exactly
 *    once: the payload bytes the Rx trace of the destination reports from the source equal
 *    the flow's size, and its data frames ceil(size / mss).  Transports that send no packets
 *    (the flow-level Ideal reference) are exempt from these packet checks only.
 * 3. The stats add up: every flow finishes once; frames the endpoints transmitted = frames
 *    the endpoints received + frames the switches dropped (the run drains, nothing is in
 *    flight); endpoints are the hosts and any node the transport attached to the fabric
 *    (ClosTopology::AttachToTor, e.g. the Fastpass arbiter).
 * 4. AddFlow rejects a zero-size flow, src == dst and a host out of range with
 *    std::invalid_argument, and any flow before Install with std::logic_error.
 * 5. On the lossless fabric (PFC) a 7:1 incast drops nothing and every flow finishes.
 */
#include "topologies/model/clos-topology.h"
#include "topologies/model/flow-transport.h"

#include "ns3/config.h"
#include "ns3/data-rate.h"
#include "ns3/enum.h"
#include "ns3/simulator.h"
#include "ns3/test.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <utility>

using namespace ns3;

namespace
{

/// One fabric with one transport on it; records finishes and per-pair delivered payload.
struct Bench
{
    Ptr<ClosTopology> topology;
    Ptr<FlowTransport> transport;
    std::map<uint64_t, Time> finish;
    std::map<uint64_t, uint32_t> finishCount;
    std::map<std::pair<uint16_t, uint16_t>, uint64_t> payloadBytes;
    std::map<std::pair<uint16_t, uint16_t>, uint64_t> dataFrames;
    uint64_t hostTx{0};
    uint64_t hostRx{0};

    Bench (const FlowTransportRegistry::Entry& entry, double rateGbps, bool lossless = false)
    {
        entry.setDefaults ();
        topology = CreateObject<ClosTopology> ();
        topology->SetAttribute ("Racks", UintegerValue (2));
        topology->SetAttribute ("HostsPerRack", UintegerValue (4));
        topology->SetAttribute ("Spines", UintegerValue (2));
        topology->SetAttribute ("AccessRate",
                                DataRateValue (DataRate (static_cast<uint64_t> (rateGbps * 1e9))));
        if (lossless)
        {
            topology->SetAttribute ("Fabric", EnumValue (ClosTopology::LOSSLESS));
        }
        transport = entry.create ();
        transport->ConfigureFabric (topology);
        topology->Build ();
        transport->Install (topology);
        transport->TraceConnectWithoutContext ("FlowFinished",
                                               MakeCallback (&Bench::OnFinished, this));
        for (uint32_t h = 0; h < topology->GetNHosts (); ++h)
        {
            topology->GetHostDevice (h)->TraceConnectWithoutContext (
                "Rx", MakeCallback (&Bench::OnRx, this));
            topology->GetHostDevice (h)->TraceConnectWithoutContext (
                "Tx", MakeCallback (&Bench::OnTx, this));
        }
        const uint32_t nHosts = topology->GetNHosts ();
        for (uint32_t e = nHosts; e < nHosts + topology->GetNAttached (); ++e)
        {
            topology->GetAttachedDevice (e)->TraceConnectWithoutContext (
                "Rx", MakeCallback (&Bench::OnRx, this));
            topology->GetAttachedDevice (e)->TraceConnectWithoutContext (
                "Tx", MakeCallback (&Bench::OnTx, this));
        }
    }

    void OnFinished (uint64_t flowId, Time at)
    {
        finish[flowId] = at;
        ++finishCount[flowId];
    }

    void OnRx (Ptr<const Packet> packet, const FabricHeader& frame)
    {
        ++hostRx;
        if (frame.payloadBytes > 0)
        {
            payloadBytes[{frame.srcHost, frame.dstHost}] += frame.payloadBytes;
            ++dataFrames[{frame.srcHost, frame.dstHost}];
        }
    }

    void OnTx (Ptr<const Packet> packet, const FabricHeader& frame)
    {
        ++hostTx;
    }

    /// Run to the end (every timer drains) and return the trace origin.
    Time Run ()
    {
        const Time origin = transport->GetTraceOrigin ();
        Simulator::Run ();
        return origin;
    }

    /// FCT / (IdealFct + the transport's declared lone-flow extra delay).
    double Slowdown (const FlowSpec& flow, Time origin) const
    {
        Time ideal =
            topology->IdealFct (flow.srcHost, flow.dstHost, flow.sizeBytes,
                                transport->GetPerPacketHeaderBytes (), transport->GetMssBytes ()) +
            transport->GetLoneFlowExtraDelay (flow);
        Time fct = finish.at (flow.flowId) - origin - NanoSeconds (flow.startNs);
        return fct.GetSeconds () / ideal.GetSeconds ();
    }
};

/**
 * The FCT of a flow alone in the Bench fabric, derived by hand in topologies/doc/clos.md
 * ("Ideal FCT") and written here apart from ClosTopology::IdealFct, so that a transport
 * whose FCT is IdealFct by construction (the flow-level Ideal) is still checked against
 * something it does not compute: its packets (payload + header + the 18 B frame) back to
 * back at the access rate R, 2 host cables d1 = 4 m x 5 ns/m, a 240 ns switch s, and across
 * racks 2 spine cables d2 = 40 m x 5 ns/m (OSDI'16 Table 4), 2 more switches and the wait of
 * the largest packet for the 4x uplink: max_k T_R(b_k) (1 - 1/4).
 */
double
HandIdealFctNs (double rateGbps, bool sameRack, uint64_t sizeBytes, uint32_t headerBytes,
                uint32_t mssBytes)
{
    const double d1 = 4 * 5.0, d2 = 40 * 5.0, s = 240.0, spineFactor = 4.0, frameBytes = 18;
    const uint64_t packets = std::max<uint64_t> (1, (sizeBytes + mssBytes - 1) / mssBytes);
    double sumNs = 0, largestNs = 0;
    for (uint64_t k = 0; k < packets; ++k)
    {
        const uint64_t payload = k + 1 < packets ? mssBytes : sizeBytes - (packets - 1) * mssBytes;
        const double ns = (payload + headerBytes + frameBytes) * 8.0 / rateGbps;
        sumNs += ns;
        largestNs = std::max (largestNs, ns);
    }
    if (sameRack)
    {
        return sumNs + 2 * d1 + s;
    }
    return sumNs + 2 * d1 + 2 * d2 + 3 * s + largestNs * (1 - 1 / spineFactor);
}

class LoneFlowCase : public TestCase
{
  public:
    LoneFlowCase (std::string protocol, double rateGbps, uint32_t dst)
          : TestCase (protocol + ": lone flow 0 -> " + std::to_string (dst) + " at " +
                      std::to_string (static_cast<int> (rateGbps)) +
                      " Gbps finishes at its ideal FCT + declared extra delay")
          , m_protocol (std::move (protocol))
          , m_rateGbps (rateGbps)
          , m_dst (dst)
    {
    }

  private:
    void DoRun () override
    {
        {
            Bench bench (*FlowTransportRegistry::Find (m_protocol), m_rateGbps);
            const uint32_t mss = bench.transport->GetMssBytes ();
            const FlowSpec flow{7, 1000, 0, m_dst, 3ULL * mss + 100};
            bench.transport->AddFlow (flow);
            const Time origin = bench.Run ();
            NS_TEST_ASSERT_MSG_EQ (bench.finishCount[7], 1, "the flow finishes exactly once");
            NS_TEST_ASSERT_MSG_EQ_TOL (bench.Slowdown (flow, origin), 1.0, 1e-9,
                                       "a lone flow finishes at the ideal FCT + extra");
            const Time extra = bench.transport->GetLoneFlowExtraDelay (flow);
            const double fctNs =
                (bench.finish.at (7) - origin - NanoSeconds (flow.startNs) - extra).GetSeconds () *
                1e9;
            const double handNs =
                HandIdealFctNs (m_rateGbps, m_dst < 4, flow.sizeBytes,
                                bench.transport->GetPerPacketHeaderBytes (), mss);
            NS_TEST_ASSERT_MSG_EQ_TOL (fctNs, handNs, 1e-3,
                                       "the lone flow's FCT - extra is the hand-derived ideal");
        }
        Simulator::Destroy ();
    }

    std::string m_protocol;
    double m_rateGbps;
    uint32_t m_dst;
};

class DeliveryCase : public TestCase
{
  public:
    DeliveryCase (std::string protocol, double rateGbps)
          : TestCase (protocol + ": every byte is delivered once and the stats add up at " +
                      std::to_string (static_cast<int> (rateGbps)) + " Gbps")
          , m_protocol (std::move (protocol))
          , m_rateGbps (rateGbps)
    {
    }

  private:
    void DoRun () override
    {
        {
            Bench bench (*FlowTransportRegistry::Find (m_protocol), m_rateGbps);
            const uint32_t mss = bench.transport->GetMssBytes ();
            const std::vector<FlowSpec> flows = {
                {1, 0, 0, 4, 200000},
                {2, 500, 1, 5, 7ULL * mss},
                {3, 800, 4, 1, 1},
                {4, 800, 5, 0, 50000},
            };
            for (const FlowSpec& flow : flows)
            {
                bench.transport->AddFlow (flow);
            }
            bench.Run ();
            const bool sendsPackets = bench.hostTx > 0;
            for (const FlowSpec& flow : flows)
            {
                NS_TEST_ASSERT_MSG_EQ (bench.finishCount[flow.flowId], 1,
                                       "flow " << flow.flowId << " finishes exactly once");
                if (sendsPackets)
                {
                    const auto pair = std::make_pair (static_cast<uint16_t> (flow.srcHost),
                                                      static_cast<uint16_t> (flow.dstHost));
                    NS_TEST_ASSERT_MSG_EQ (bench.payloadBytes[pair], flow.sizeBytes,
                                           "flow " << flow.flowId << ": payload delivered once");
                    NS_TEST_ASSERT_MSG_EQ (bench.dataFrames[pair], (flow.sizeBytes + mss - 1) / mss,
                                           "flow " << flow.flowId << ": one frame per packet");
                }
            }
            NS_TEST_ASSERT_MSG_EQ (bench.topology->GetSwitchPortDrops (), 0,
                                   "disjoint pairs: no switch drop");
            NS_TEST_ASSERT_MSG_EQ (bench.hostTx,
                                   bench.hostRx + bench.topology->GetSwitchPortDrops (),
                                   "frames sent = frames received + frames dropped");
        }
        Simulator::Destroy ();
    }

    std::string m_protocol;
    double m_rateGbps;
};

class RejectCase : public TestCase
{
  public:
    explicit RejectCase (std::string protocol)
          : TestCase (protocol + ": zero-size and bad flows are rejected")
          , m_protocol (std::move (protocol))
    {
    }

  private:
    void DoRun () override
    {
        const FlowTransportRegistry::Entry& entry = *FlowTransportRegistry::Find (m_protocol);
        {
            Ptr<FlowTransport> loose = entry.create ();
            bool logic = false;
            try
            {
                loose->AddFlow (FlowSpec{1, 0, 0, 1, 1000});
            }
            catch (const std::logic_error& error)
            {
                logic = dynamic_cast<const std::invalid_argument*> (&error) == nullptr;
            }
            NS_TEST_ASSERT_MSG_EQ (logic, true, "AddFlow before Install is a logic_error");
            loose->Dispose ();

            Bench bench (entry, 40);
            const std::vector<std::pair<FlowSpec, std::string>> bad = {
                {FlowSpec{1, 0, 0, 1, 0}, "size_bytes is 0"},
                {FlowSpec{2, 0, 3, 3, 1000}, "src_host == dst_host"},
                {FlowSpec{3, 0, 0, 8, 1000}, "host out of range"},
                {FlowSpec{4, 0, 9, 1, 1000}, "host out of range"},
            };
            for (const auto& [flow, why] : bad)
            {
                std::string message;
                try
                {
                    bench.transport->AddFlow (flow);
                }
                catch (const std::invalid_argument& error)
                {
                    message = error.what ();
                }
                NS_TEST_ASSERT_MSG_NE (message.find (why), std::string::npos,
                                       "flow " << flow.flowId << " rejected: '" << message << "'");
                NS_TEST_ASSERT_MSG_NE (message.find ("flow " + std::to_string (flow.flowId)),
                                       std::string::npos, "the error names the flow");
            }
            bench.Run ();
            NS_TEST_ASSERT_MSG_EQ (bench.finish.size (), 0, "no rejected flow ran");
        }
        Simulator::Destroy ();
    }

    std::string m_protocol;
};

/**
 * 5. On the lossless fabric (PFC), a 7:1 incast into host 0 (hosts 1..7, 60 KB each, at once)
 * loses nothing: every flow finishes once with all its payload delivered, and no switch port
 * or NIC drops a frame.  (Payload may arrive more than once: pHost resends on its own
 * timers without a loss; RoCE's suite checks that it resends nothing.)
 */
class LosslessIncastCase : public TestCase
{
  public:
    LosslessIncastCase (std::string protocol, double rateGbps)
          : TestCase (protocol + ": a 7:1 incast on the lossless fabric drops nothing at " +
                      std::to_string (static_cast<int> (rateGbps)) + " Gbps")
          , m_protocol (std::move (protocol))
          , m_rateGbps (rateGbps)
    {
    }

  private:
    void DoRun () override
    {
        {
            Bench bench (*FlowTransportRegistry::Find (m_protocol), m_rateGbps, true);
            const uint64_t size = 60000;
            for (uint32_t h = 1; h < 8; ++h)
            {
                bench.transport->AddFlow (FlowSpec{h, 0, h, 0, size});
            }
            bench.Run ();
            const bool sendsPackets = bench.hostTx > 0;
            for (uint32_t h = 1; h < 8; ++h)
            {
                NS_TEST_ASSERT_MSG_EQ (bench.finishCount[h], 1, "flow " << h << " finishes once");
                if (sendsPackets)
                {
                    const auto pair = std::make_pair (static_cast<uint16_t> (h), uint16_t (0));
                    NS_TEST_ASSERT_MSG_GT_OR_EQ (bench.payloadBytes[pair], size,
                                                 "flow " << h << ": every byte delivered");
                }
            }
            NS_TEST_ASSERT_MSG_EQ (bench.topology->GetSwitchPortDrops (), 0, "no switch drop");
            NS_TEST_ASSERT_MSG_EQ (bench.topology->GetHostNicDrops (), 0, "no NIC drop");
        }
        Simulator::Destroy ();
    }

    std::string m_protocol;
    double m_rateGbps;
};

class TransportConformanceSuite : public TestSuite
{
  public:
    TransportConformanceSuite ()
          : TestSuite ("disaggsim-transport-conformance", UNIT)
    {
        for (const std::string& name : FlowTransportRegistry::GetNames ())
        {
            for (double rate : {40.0, 100.0})
            {
                AddTestCase (new LoneFlowCase (name, rate, 1), TestCase::QUICK);
                AddTestCase (new LoneFlowCase (name, rate, 4), TestCase::QUICK);
                AddTestCase (new DeliveryCase (name, rate), TestCase::QUICK);
                AddTestCase (new LosslessIncastCase (name, rate), TestCase::QUICK);
            }
            AddTestCase (new RejectCase (name), TestCase::QUICK);
        }
    }
};

TransportConformanceSuite g_transportConformanceSuite;

} // namespace
