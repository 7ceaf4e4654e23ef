/*
 * disaggsim: pFabric as a FlowTransport over the Clos fabric (protocol name "pfabric").
 */
#include "pfabric-helper.h"

#include "transports/pfabric/model/pfabric-header.h"
#include "transports/pfabric/model/pfabric-queue.h"

#include "ns3/abort.h"
#include "ns3/log.h"
#include "ns3/simulator.h"
#include "ns3/trace-source-accessor.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <cmath>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE ("PfabricFlowTransport");
NS_OBJECT_ENSURE_REGISTERED (PfabricFlowTransport);

namespace
{
const FlowTransportRegistrar g_pfabricRegistrar ({
    "pfabric",
    "pFabric (Alizadeh et al. SIGCOMM'13): remaining-size priorities, pFabric switch ports, "
    "line-rate start, fixed RTO (transports/pfabric/doc/pfabric.md)",
    [] {},
    [] { return Ptr<FlowTransport> (CreateObject<PfabricFlowTransport> ()); },
    "ns3::PfabricSender::MssBytes",
});
} // namespace

TypeId
PfabricFlowTransport::GetTypeId ()
{
    static TypeId tid =
        TypeId ("ns3::PfabricFlowTransport")
            .SetParent<FlowTransport> ()
            .SetGroupName ("Disaggsim")
            .AddConstructor<PfabricFlowTransport> ()
            .AddAttribute ("HostBufferBytes",
                           "Host NIC pFabric buffer in wire bytes; 0 = unlimited: the host "
                           "never drops its own packets, it sends them in priority order as "
                           "the link frees (back-pressure, as a real host stack; "
                           "doc/pfabric.md §3).  36864 = YAPS (host queues get the switch "
                           "discipline and queue_size, and drop)",
                           UintegerValue (0),
                           MakeUintegerAccessor (&PfabricFlowTransport::m_hostBufferBytes),
                           MakeUintegerChecker<uint32_t> ())
            .AddTraceSource ("FlowAcked",
                             "The sender got the ACK of a flow's last byte: (flow id, time)",
                             MakeTraceSourceAccessor (&PfabricFlowTransport::m_flowAckedTrace),
                             "ns3::PfabricFlowTransport::FlowAckedCallback");
    return tid;
}

PfabricFlowTransport::PfabricFlowTransport () = default;

PfabricFlowTransport::~PfabricFlowTransport () = default;

void
PfabricFlowTransport::DoDispose ()
{
    m_active.clear ();
    m_hosts.clear ();
    m_senderPrototype = nullptr;
    m_receiverPrototype = nullptr;
    m_topology = nullptr;
    FlowTransport::DoDispose ();
}

void
PfabricFlowTransport::ConfigureFabric (Ptr<ClosTopology> topology)
{
    m_topology = topology;
    ObjectFactory switchQueue;
    switchQueue.SetTypeId ("ns3::PfabricQueue");
    topology->SetSwitchQueue (switchQueue);
    ObjectFactory hostQueue;
    hostQueue.SetTypeId ("ns3::PfabricQueue");
    topology->SetHostQueue (hostQueue);
    // The host NIC size is pFabric's (YAPS gives hosts the switch queue_size): it overrides
    // ClosTopology::HostBufferBytes, which the topology applies as the queue's MaxBytes.
    ApplyHostBufferBytes (topology, m_hostBufferBytes,
                          "ns3::PfabricFlowTransport::HostBufferBytes");

    // Resolve the window and the timeout (doc/pfabric.md §6).
    Ptr<PfabricSender> prototype = CreateObject<PfabricSender> ();
    UintegerValue mss;
    UintegerValue initialCwnd;
    UintegerValue maxCwnd;
    TimeValue rto;
    TimeValue minRto;
    prototype->GetAttribute ("MinRto", minRto);
    prototype->GetAttribute ("MssBytes", mss);
    prototype->GetAttribute ("InitialCwnd", initialCwnd);
    prototype->GetAttribute ("MaxCwnd", maxCwnd);
    prototype->GetAttribute ("Rto", rto);
    m_mssBytes = static_cast<uint32_t> (mss.Get ());

    m_baseRtt = topology->BaseRtt (kPfabricHeaderBytes, m_mssBytes);
    double bdpBytes = topology->BdpBytes (kPfabricHeaderBytes, m_mssBytes);
    uint32_t packetBytes = m_mssBytes + kPfabricHeaderBytes + kFabricHeaderBytes;
    uint32_t derivedCwnd =
        std::max<uint32_t> (2, static_cast<uint32_t> (std::ceil (bdpBytes / packetBytes)));
    m_initialCwnd =
        initialCwnd.Get () != 0 ? static_cast<uint32_t> (initialCwnd.Get ()) : derivedCwnd;
    m_maxCwnd = maxCwnd.Get () != 0 ? static_cast<uint32_t> (maxCwnd.Get ()) : m_initialCwnd + 3;
    m_rto = !rto.Get ().IsZero () ? rto.Get () : std::max (3 * m_baseRtt, minRto.Get ());
    NS_LOG_INFO ("pFabric: rtt " << m_baseRtt << " bdp " << bdpBytes << " B, cwnd " << m_initialCwnd
                                 << "/" << m_maxCwnd << " rto " << m_rto);
    prototype->SetWindowAndRto (m_initialCwnd, m_maxCwnd, m_rto);
    prototype->TraceConnectWithoutContext ("FlowAcked",
                                           MakeCallback (&PfabricFlowTransport::OnFlowAcked, this));
    m_senderPrototype = prototype;
    m_receiverPrototype = CreateObject<PfabricReceiver> ();
    m_receiverPrototype->TraceConnectWithoutContext (
        "FlowReceived", MakeCallback (&PfabricFlowTransport::OnFlowReceived, this));
}

void
PfabricFlowTransport::Install (Ptr<ClosTopology> topology)
{
    m_topology = topology;
    m_hosts.clear ();
    for (uint32_t i = 0; i < topology->GetNHosts (); ++i)
    {
        Ptr<PfabricHost> host = CreateObject<PfabricHost> ();
        host->Setup (topology->GetHostDevice (i), static_cast<uint16_t> (i));
        m_hosts.push_back (host);
    }
    m_starts.SetStartCallback ([this] (uint64_t index) { StartFlow (m_flows[index]); });
    SetFlowTopology (topology);
}

void
PfabricFlowTransport::DoAddFlow (const FlowSpec& flow)
{
    m_starts.Add (m_flows.size (), flow.startNs);
    m_flows.push_back (flow);
    m_starts.ScheduleNow ();
}

void
PfabricFlowTransport::StartFlow (const FlowSpec& flow)
{
    NS_ABORT_MSG_IF (!m_senderPrototype,
                     "PfabricFlowTransport: ConfigureFabric must run before flows start");
    // Copies of the prototypes (ConfigureFabric): configured and connected already.
    Ptr<PfabricReceiver> receiver = CopyObject<PfabricReceiver> (m_receiverPrototype);
    receiver->Setup (m_hosts[flow.dstHost], flow.flowId, static_cast<uint16_t> (flow.srcHost),
                     flow.sizeBytes, m_mssBytes);
    m_hosts[flow.dstHost]->AddReceiver (flow.flowId, receiver);

    Ptr<PfabricSender> sender = CopyObject<PfabricSender> (m_senderPrototype);
    sender->Setup (m_hosts[flow.srcHost], flow.flowId, static_cast<uint16_t> (flow.dstHost),
                   flow.sizeBytes);
    m_hosts[flow.srcHost]->AddSender (flow.flowId, sender);
    m_active[flow.flowId] = Active{sender, flow.srcHost, flow.dstHost};
    sender->Start ();
}

void
PfabricFlowTransport::OnFlowReceived (uint64_t flowId, Time received)
{
    NotifyFlowFinished (flowId);
}

void
PfabricFlowTransport::OnFlowAcked (uint64_t flowId, Time start, Time acked)
{
    m_flowAckedTrace (flowId, acked);
    // Not from inside the sender's own call stack: the host holds its last reference.
    Simulator::ScheduleNow (&PfabricFlowTransport::Release, this, flowId);
}

void
PfabricFlowTransport::Release (uint64_t flowId)
{
    auto it = m_active.find (flowId);
    if (it == m_active.end ())
    {
        return;
    }
    m_timeouts += it->second.sender->GetTimeouts ();
    m_deferredTimeouts += it->second.sender->GetDeferredTimeouts ();
    m_dataPacketsSent += it->second.sender->GetDataPacketsSent ();
    m_hosts[it->second.srcHost]->RemoveSender (flowId);
    m_hosts[it->second.dstHost]->RemoveReceiver (flowId);
    m_active.erase (it);
}

uint64_t
PfabricFlowTransport::GetPriorityDrops () const
{
    return GetSwitchPriorityDrops () + GetHostPriorityDrops ();
}

uint64_t
PfabricFlowTransport::GetSwitchPriorityDrops () const
{
    return m_topology ? m_topology->GetSwitchPortDrops () : 0;
}

uint64_t
PfabricFlowTransport::GetHostPriorityDrops () const
{
    return m_topology ? m_topology->GetHostNicDrops () : 0;
}

std::vector<std::pair<std::string, std::string>>
PfabricFlowTransport::GetStatistics () const
{
    uint64_t nicDrops = 0;
    for (const Ptr<PfabricHost>& host : m_hosts)
    {
        nicDrops += host->GetNicDrops ();
    }
    // Senders not yet released count too: the run stops when the last flow's last byte is
    // received, before its final ACK is back at the sender.
    uint64_t timeouts = m_timeouts;
    uint64_t deferredTimeouts = m_deferredTimeouts;
    uint64_t dataPacketsSent = m_dataPacketsSent;
    for (const auto& [flowId, active] : m_active)
    {
        timeouts += active.sender->GetTimeouts ();
        deferredTimeouts += active.sender->GetDeferredTimeouts ();
        dataPacketsSent += active.sender->GetDataPacketsSent ();
    }
    return {
        {"pfabric.priority_drops_switch", std::to_string (GetSwitchPriorityDrops ())},
        {"pfabric.priority_drops_host", std::to_string (GetHostPriorityDrops ())},
        {"pfabric.host_nic_drops", std::to_string (nicDrops)},
        {"pfabric.timeouts", std::to_string (timeouts)},
        {"pfabric.deferred_timeouts", std::to_string (deferredTimeouts)},
        {"pfabric.data_packets_sent", std::to_string (dataPacketsSent)},
        {"pfabric.flows_unacked", std::to_string (m_active.size ())},
    };
}

uint32_t
PfabricFlowTransport::GetPerPacketHeaderBytes () const
{
    return kPfabricHeaderBytes;
}

uint32_t
PfabricFlowTransport::GetMssBytes () const
{
    return m_mssBytes;
}

std::vector<TypeId>
PfabricFlowTransport::GetConfigTypeIds () const
{
    return {GetInstanceTypeId (), PfabricSender::GetTypeId (), PfabricQueue::GetTypeId ()};
}

std::vector<std::pair<std::string, std::string>>
PfabricFlowTransport::GetDerivedConfig () const
{
    return {
        {"pfabric.base_rtt_ns", std::to_string (m_baseRtt.GetNanoSeconds ())},
        {"pfabric.initial_cwnd_pkts", std::to_string (m_initialCwnd)},
        {"pfabric.max_cwnd_pkts", std::to_string (m_maxCwnd)},
        {"pfabric.rto_ns", std::to_string (m_rto.GetNanoSeconds ())},
    };
}

} // namespace ns3
