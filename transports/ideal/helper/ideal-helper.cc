/*
 * disaggsim: the Ideal reference as a FlowTransport (protocol name "ideal").
 */
#include "ideal-helper.h"

#include "transports/ideal/model/ideal-srpt.h"

#include "ns3/abort.h"
#include "ns3/log.h"
#include "ns3/simulator.h"
#include "ns3/uinteger.h"

namespace ns3
{

NS_LOG_COMPONENT_DEFINE ("IdealFlowTransport");
NS_OBJECT_ENSURE_REGISTERED (IdealFlowTransport);

namespace
{
const FlowTransportRegistrar g_idealRegistrar ({
    "ideal",
    "Ideal: flow-level SRPT over one big switch, no packets (pFabric SIGCOMM'13 §5; "
    "transports/pfabric/doc/pfabric.md §7)",
    [] {},
    [] { return Ptr<FlowTransport> (CreateObject<IdealFlowTransport> ()); },
    "ns3::IdealFlowTransport::MssBytes",
});
} // namespace

TypeId
IdealFlowTransport::GetTypeId ()
{
    static TypeId tid =
        TypeId ("ns3::IdealFlowTransport")
            .SetParent<FlowTransport> ()
            .SetGroupName ("Disaggsim")
            .AddConstructor<IdealFlowTransport> ()
            .AddAttribute ("PerPacketHeaderBytes",
                           "Header bytes per packet above the 18 B frame header; 22 makes the "
                           "40 B per packet of pFabric/YAPS (hdr_size 40)",
                           UintegerValue (22),
                           MakeUintegerAccessor (&IdealFlowTransport::m_headerBytes),
                           MakeUintegerChecker<uint32_t> ())
            .AddAttribute ("MssBytes", "Payload bytes per packet (YAPS mss 1460)",
                           UintegerValue (1460),
                           MakeUintegerAccessor (&IdealFlowTransport::m_mssBytes),
                           MakeUintegerChecker<uint32_t> (1));
    return tid;
}

IdealFlowTransport::IdealFlowTransport () = default;

IdealFlowTransport::~IdealFlowTransport () = default;

void
IdealFlowTransport::DoDispose ()
{
    m_topology = nullptr;
    FlowTransport::DoDispose ();
}

void
IdealFlowTransport::ConfigureFabric (Ptr<ClosTopology> topology)
{
    m_topology = topology; // the ports' queues stay the default: no packet is ever sent
}

void
IdealFlowTransport::Install (Ptr<ClosTopology> topology)
{
    m_topology = topology;
    SetFlowTopology (topology);
}

void
IdealFlowTransport::DoAddFlow (const FlowSpec& flow)
{
    NS_ABORT_MSG_IF (m_computed, "IdealFlowTransport: flows must be added before the run");
    m_flows.push_back (flow);
    if (!m_scheduled)
    {
        m_scheduled = true;
        Simulator::ScheduleNow (&IdealFlowTransport::Compute, this);
    }
}

Time
IdealFlowTransport::GetWork (uint64_t sizeBytes) const
{
    const uint64_t bps = m_topology->GetAccessRate ().GetBitRate ();
    const uint32_t overhead = m_headerBytes + kFabricHeaderBytes;
    uint64_t full = sizeBytes / m_mssBytes;
    uint64_t last = sizeBytes % m_mssBytes;
    int64_t ps = FabricNetDevice::TxTimeFor (m_mssBytes + overhead, bps).GetPicoSeconds () *
                 static_cast<int64_t> (full);
    if (last != 0 || sizeBytes == 0)
    {
        ps += FabricNetDevice::TxTimeFor (last + overhead, bps).GetPicoSeconds ();
    }
    return PicoSeconds (ps);
}

void
IdealFlowTransport::Compute ()
{
    m_computed = true;
    std::vector<IdealSrptFlow> input;
    input.reserve (m_flows.size ());
    for (const FlowSpec& flow : m_flows)
    {
        input.push_back (IdealSrptFlow{flow.startNs * 1000, flow.srcHost, flow.dstHost,
                                       GetWork (flow.sizeBytes).GetPicoSeconds ()});
    }
    std::vector<int64_t> done = IdealSrptCompletions (input);
    Time now = Simulator::Now ();
    for (std::size_t i = 0; i < m_flows.size (); ++i)
    {
        const FlowSpec& flow = m_flows[i];
        Time latency = m_topology->IdealFct (flow.srcHost, flow.dstHost, flow.sizeBytes,
                                             m_headerBytes, m_mssBytes) -
                       PicoSeconds (input[i].workPs);
        Time finish = PicoSeconds (done[i]) + latency;
        Simulator::Schedule (finish - now, &IdealFlowTransport::NotifyFlowFinished, this,
                             flow.flowId);
    }
}

uint32_t
IdealFlowTransport::GetPerPacketHeaderBytes () const
{
    return m_headerBytes;
}

uint32_t
IdealFlowTransport::GetMssBytes () const
{
    return m_mssBytes;
}

} // namespace ns3
