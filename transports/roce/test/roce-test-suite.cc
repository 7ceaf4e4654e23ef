/*
 * disaggsim: RoCEv2 (transports/roce) test suite; each case states its derivation.
 *
 * Fabric unless stated: ClosTopology 2 racks x 4 hosts, 2 spines (4x uplinks), OSDI'16
 * Table 4 cables (4 m host, 40 m spine, 5 ns/m) and 240 ns cut-through switching; payload
 * 1000 B per full packet (RoceFlowTransport::MssBytes).
 */
#include "transports/roce/helper/roce-helper.h"
#include "transports/roce/model/roce-dcqcn.h"
#include "transports/roce/model/roce-header.h"
#include "transports/roce/model/roce-hpcc.h"

#include "topologies/model/clos-topology.h"
#include "topologies/model/drop-tail-ecn-queue.h"
#include "topologies/model/int-tag.h"

#include "ns3/boolean.h"
#include "ns3/config.h"
#include "ns3/data-rate.h"
#include "ns3/enum.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/test.h"
#include "ns3/uinteger.h"

#include <cmath>
#include <map>
#include <string>

using namespace ns3;

namespace
{

constexpr double kHostCableNs = 4 * 5.0;   // 4 m x 5 ns/m
constexpr double kSpineCableNs = 40 * 5.0; // 40 m x 5 ns/m
constexpr double kSwitchNs = 240.0;

/// One fabric with RoCE on it; records finish and last-ACK times.
struct RoceBench
{
    Ptr<ClosTopology> topology;
    Ptr<RoceFlowTransport> transport;
    std::map<uint64_t, Time> finish;
    std::map<uint64_t, Time> acked;
    std::map<uint16_t, uint64_t> payloadBySrc; //!< payload bytes received from each host

    RoceBench (const std::string& cc, double rateGbps, bool lossless,
               const std::map<std::string, std::string>& attributes = {})
    {
        Config::Reset ();
        Config::SetDefault ("ns3::RoceFlowTransport::CongestionControl", StringValue (cc));
        for (const auto& [path, value] : attributes)
        {
            Config::SetDefault (path, StringValue (value));
        }
        topology = CreateObject<ClosTopology> ();
        topology->SetAttribute ("Racks", UintegerValue (2));
        topology->SetAttribute ("HostsPerRack", UintegerValue (4));
        topology->SetAttribute ("Spines", UintegerValue (2));
        topology->SetAttribute ("AccessRate",
                                DataRateValue (DataRate (static_cast<uint64_t> (rateGbps * 1e9))));
        if (lossless)
        {
            topology->SetAttribute ("Fabric", StringValue ("lossless"));
        }
        transport = CreateObject<RoceFlowTransport> ();
        transport->ConfigureFabric (topology);
        topology->Build ();
        transport->Install (topology);
        transport->TraceConnectWithoutContext ("FlowFinished",
                                               MakeCallback (&RoceBench::OnFinished, this));
        for (uint32_t h = 0; h < topology->GetNHosts (); ++h)
        {
            topology->GetHostDevice (h)->TraceConnectWithoutContext (
                "Rx", MakeCallback (&RoceBench::OnRx, this));
        }
    }

    void OnFinished (uint64_t flowId, Time at)
    {
        finish[flowId] = at;
    }

    void OnRx (Ptr<const Packet> packet, const FabricHeader& frame)
    {
        payloadBySrc[frame.srcHost] += frame.payloadBytes;
    }

    void Run (Time stop = Time (0))
    {
        if (!stop.IsZero ())
        {
            Simulator::Stop (stop);
        }
        Simulator::Run ();
    }

    ~RoceBench ()
    {
        Simulator::Destroy ();
        Config::Reset ();
    }
};

/// \returns PFC frames sent by every switch port.
uint64_t
PfcFramesSent (Ptr<ClosTopology> topology)
{
    uint64_t n = 0;
    for (const Ptr<FabricNetDevice>& port : topology->GetSwitchPorts ())
    {
        n += port->GetPfcFramesSent ();
    }
    return n;
}

/**
 * Hand-derived time for \p packets frames of \p wireBytes[k] (payload + headers + 18 B) sent
 * back to back at R from a host to a host in the other rack: serialization of every frame at
 * R, 2 host cables, 2 spine cables, 3 cut-through switches, and the ToR's wait for the
 * largest frame's tail before sending it 4x faster (topologies/doc/clos.md "Ideal FCT").
 */
double
InterRackNs (double rateGbps, const std::vector<uint32_t>& wireBytes)
{
    double sum = 0, largest = 0;
    for (uint32_t b : wireBytes)
    {
        sum += b * 8.0 / rateGbps;
        largest = std::max (largest, b * 8.0 / rateGbps);
    }
    return sum + 2 * kHostCableNs + 2 * kSpineCableNs + 3 * kSwitchNs + largest * (1 - 0.25);
}

/**
 * A lone 3 x 1000 B + 100 B WRITE from host 0 to host 4 (other rack) finishes when its last
 * byte arrives, at the hand-derived time of its 4 frames (payload + 44 B RoCEv2 headers
 * (+ 42 B INT header with HPCC) + 18 B): the QP starts at line rate and, with 4 frames,
 * is done before the first ACK could change its rate.  Its last byte is acknowledged one
 * ACK's trip later: 48 B + 18 B (+ 42 B echoed INT with HPCC) across the same path.
 */
class LoneFlowCase : public TestCase
{
  public:
    LoneFlowCase (std::string cc, double rateGbps)
          : TestCase ("roce-" + cc + ": lone WRITE at " + std::to_string (int (rateGbps)) +
                      " Gbps finishes at the hand-derived FCT, its ACK one ACK trip later"),
            m_cc (std::move (cc)),
            m_rateGbps (rateGbps)
    {
    }

  private:
    void DoRun () override
    {
        RoceBench bench (m_cc, m_rateGbps, true);
        bench.transport->TraceConnectWithoutContext ("FlowAcked",
                                                     MakeCallback (&LoneFlowCase::OnAcked, this));
        const uint64_t size = 3 * 1000 + 100;
        bench.transport->AddFlow (FlowSpec{1, 1000, 0, 4, size});
        bench.Run ();
        const uint32_t header = 44 + (m_cc == "hpcc" ? 42 : 0) + 18;
        const double fctNs = InterRackNs (m_rateGbps, {1000 + header, 1000 + header,
                                                       1000 + header, 100 + header});
        NS_TEST_ASSERT_MSG_EQ_TOL ((bench.finish.at (1) - NanoSeconds (1000)).GetSeconds () * 1e9,
                                   fctNs, 1e-3, "FCT = 4 frames + path");
        const uint32_t ackWire = 48 + (m_cc == "hpcc" ? 42 : 0) + 18;
        NS_TEST_ASSERT_MSG_EQ_TOL ((m_acked - bench.finish.at (1)).GetSeconds () * 1e9,
                                   InterRackNs (m_rateGbps, {ackWire}), 1e-3,
                                   "the last ACK arrives one ACK trip after the last byte");
        NS_TEST_ASSERT_MSG_EQ (bench.transport->GetRetransmittedPackets (), 0, "no retransmission");
        NS_TEST_ASSERT_MSG_EQ (bench.transport->GetDataPacketsSent (), 4, "4 data packets");
        NS_TEST_ASSERT_MSG_EQ (PfcFramesSent (bench.topology), 0,
                               "a lone flow causes no pause");
    }

    void OnAcked (uint64_t, Time at)
    {
        m_acked = at;
    }

    Time m_acked;

    std::string m_cc;
    double m_rateGbps;
};

} // namespace

namespace
{

class RoceTestSuite : public TestSuite
{
  public:
    RoceTestSuite ()
          : TestSuite ("disaggsim-roce", UNIT)
    {
        for (const std::string cc : {"none", "dcqcn", "hpcc"})
        {
            for (double rate : {40.0, 100.0})
            {
                AddTestCase (new LoneFlowCase (cc, rate), TestCase::QUICK);
            }
        }
    }
};

RoceTestSuite g_roceTestSuite;

} // namespace
