/*
 * disaggsim: RoCEv2 as a FlowTransport over the Clos fabric.
 */
#include "roce-helper.h"

#include "transports/roce/model/roce-dcqcn.h"
#include "transports/roce/model/roce-header.h"
#include "transports/roce/model/roce-hpcc.h"

#include "topologies/model/fabric-net-device.h"
#include "topologies/model/int-tag.h"

#include "ns3/abort.h"
#include "ns3/boolean.h"
#include "ns3/config.h"
#include "ns3/enum.h"
#include "ns3/log.h"
#include "ns3/string.h"
#include "ns3/simulator.h"
#include "ns3/trace-source-accessor.h"
#include "ns3/uinteger.h"

namespace ns3
{

NS_LOG_COMPONENT_DEFINE ("RoceFlowTransport");
NS_OBJECT_ENSURE_REGISTERED (RoceFlowTransport);

namespace
{
/// A registry entry per congestion control, so that a campaign grid names each as a protocol.
FlowTransportRegistry::Entry
RoceEntry (const std::string& name, const std::string& cc, const std::string& description)
{
    return {
        name,
        description + " (transports/roce/doc/roce.md)",
        [cc] {
            Config::SetDefault ("ns3::RoceFlowTransport::CongestionControl", StringValue (cc));
        },
        [] { return Ptr<FlowTransport> (CreateObject<RoceFlowTransport> ()); },
        "ns3::RoceFlowTransport::MssBytes",
    };
}

const FlowTransportRegistrar g_roceDcqcn (RoceEntry (
    "roce-dcqcn", "dcqcn",
    "RoCEv2 RC queue pairs with DCQCN (Zhu et al. SIGCOMM'15): CNPs on CE marks, rate control"));
const FlowTransportRegistrar g_roceHpcc (RoceEntry (
    "roce-hpcc", "hpcc",
    "RoCEv2 RC queue pairs with HPCC (Li et al. SIGCOMM'19): INT-driven window and rate"));
const FlowTransportRegistrar g_roceNone (RoceEntry (
    "roce-none", "none", "RoCEv2 RC queue pairs at line rate, no congestion control (PFC alone)"));
} // namespace

TypeId
RoceFlowTransport::GetTypeId ()
{
    static TypeId tid =
        TypeId ("ns3::RoceFlowTransport")
            .SetParent<FlowTransport> ()
            .SetGroupName ("Disaggsim")
            .AddConstructor<RoceFlowTransport> ()
            .AddAttribute ("CongestionControl",
                           "Congestion control of every queue pair: none (line rate, PFC "
                           "alone), dcqcn (RoceDcqcn) or hpcc (RoceHpcc)",
                           EnumValue (CC_DCQCN),
                           MakeEnumAccessor (&RoceFlowTransport::m_ccKind),
                           MakeEnumChecker (CC_NONE, "none", CC_DCQCN, "dcqcn", CC_HPCC, "hpcc"))
            .AddAttribute ("Read",
                           "false: a flow is an RDMA WRITE from its source; true: an RDMA READ "
                           "issued by its destination, whose responses carry the data",
                           BooleanValue (false), MakeBooleanAccessor (&RoceFlowTransport::m_read),
                           MakeBooleanChecker ())
            .AddAttribute ("MssBytes",
                           "Payload bytes of a full data packet asked for (the QP's path MTU "
                           "as an application requests it; 1000: HPCC's mix/config.txt "
                           "PACKET_PAYLOAD_SIZE and rdma-hw.cc Mtu).  The QP uses at most the "
                           "port's active RoCE MTU (ActiveMtuBytes of FabricNetDevice::Mtu: "
                           "1024 on a 1500 B port), as perftest lowers a requested MTU above "
                           "the active one; 0 = the active MTU",
                           UintegerValue (1000), MakeUintegerAccessor (&RoceFlowTransport::m_mssBytes),
                           MakeUintegerChecker<uint32_t> (0, 9000))
            .AddTraceSource ("FlowAcked",
                             "The sender got the ACK of a flow's last byte: (flow id, time)",
                             MakeTraceSourceAccessor (&RoceFlowTransport::m_flowAckedTrace),
                             "ns3::RoceFlowTransport::FlowAckedCallback");
    return tid;
}

RoceFlowTransport::RoceFlowTransport () = default;

RoceFlowTransport::~RoceFlowTransport () = default;

void
RoceFlowTransport::DoDispose ()
{
    for (auto& [flowId, active] : m_active)
    {
        active.sender->Dispose ();
    }
    m_active.clear ();
    m_hosts.clear ();
    IntRecords::Clear (); // records of frames still in flight (or dropped) at the end
    m_senderPrototype = nullptr;
    m_receiverPrototype = nullptr;
    m_topology = nullptr;
    FlowTransport::DoDispose ();
}

uint32_t
RoceFlowTransport::ActiveMtuBytes (uint32_t portMtuBytes, uint32_t intHeaderBytes)
{
    // Linux include/rdma/ib_addr.h iboe_get_mtu: the IP MTU less IB_GRH_BYTES 40 +
    // IB_UDP_BYTES 8 + IB_BTH_BYTES 12 + IB_EXT_XRC_BYTES 4 + IB_EXT_ATOMICETH_BYTES 28 +
    // IB_ICRC_BYTES 4, rounded down to an IB MTU (enum ib_mtu, include/rdma/ib_verbs.h:
    // 256 ... 4096 B).
    constexpr uint32_t kIboeHeaderBytes = 40 + 8 + 12 + 4 + 28 + 4;
    const uint32_t overhead = kIboeHeaderBytes + intHeaderBytes;
    const uint32_t room = portMtuBytes > overhead ? portMtuBytes - overhead : 0;
    for (uint32_t mtu = 4096; mtu >= 256; mtu /= 2)
    {
        if (room >= mtu)
        {
            return mtu;
        }
    }
    return 0;
}

void
RoceFlowTransport::ConfigureFabric (Ptr<ClosTopology> topology)
{
    m_topology = topology;
    // The payload per data packet, once: the requested MssBytes, at most the active RoCE MTU
    // of the hosts' ports (FabricNetDevice::Mtu, read from its configured default: the
    // topology gives every port that value).
    TypeId::AttributeInformation mtuInfo;
    NS_ABORT_MSG_IF (!FabricNetDevice::GetTypeId ().LookupAttributeByName ("Mtu", &mtuInfo),
                     "RoceFlowTransport: ns3::FabricNetDevice has no Mtu attribute");
    m_portMtuBytes = static_cast<uint32_t> (
        DynamicCast<const UintegerValue> (mtuInfo.initialValue)->Get ());
    m_activeMtuBytes =
        ActiveMtuBytes (m_portMtuBytes, m_ccKind == CC_HPCC ? kIntHeaderBytes : 0);
    NS_ABORT_MSG_IF (m_activeMtuBytes == 0,
                     "RoceFlowTransport: ns3::FabricNetDevice::Mtu " << m_portMtuBytes
                         << " B leaves no room for the smallest IB MTU (256 B) after the "
                            "RoCEv2 headers");
    m_payloadBytes = m_mssBytes == 0 ? m_activeMtuBytes : std::min (m_mssBytes, m_activeMtuBytes);
    m_ccFactory.SetTypeId (m_ccKind == CC_DCQCN  ? RoceDcqcn::GetTypeId ()
                           : m_ccKind == CC_HPCC ? RoceHpcc::GetTypeId ()
                                                 : RoceCongestionControl::GetTypeId ());
    // T: a full data packet to the farthest host and its ACK back, at their real sizes.
    const uint32_t header = GetPerPacketHeaderBytes ();
    const uint32_t ackBytes = kRoceAckHeaderBytes + (m_ccKind == CC_HPCC ? kIntHeaderBytes : 0);
    const uint32_t far = topology->GetNRacks () > 1 ? topology->GetHostsPerRack () : 1;
    m_baseRtt = topology->IdealFct (0, far, m_payloadBytes, header, m_payloadBytes) +
                topology->IdealFct (far, 0, ackBytes, 0, ackBytes);
    m_senderPrototype = CreateObject<RoceSender> ();
    if (m_senderPrototype->GetRto ().IsZero ())
    {
        // RoceSender::Rto's derivation: a lossless fabric never drops, so the timeout only
        // guards a broken path (IBA Local ACK Timeout 14); a lossy one recovers tail drops
        // by it (IRN's RTO_high).
        m_senderPrototype->SetRto (topology->GetFabric () == ClosTopology::LOSSLESS
                                       ? NanoSeconds (4096LL << 14)
                                       : MicroSeconds (320));
    }
    m_senderPrototype->TraceConnectWithoutContext (
        "FlowAcked", MakeCallback (&RoceFlowTransport::OnFlowAcked, this));
    m_receiverPrototype = CreateObject<RoceReceiver> ();
    m_receiverPrototype->TraceConnectWithoutContext (
        "FlowReceived", MakeCallback (&RoceFlowTransport::OnFlowReceived, this));
}

void
RoceFlowTransport::Install (Ptr<ClosTopology> topology)
{
    m_topology = topology;
    m_hosts.clear ();
    for (uint32_t i = 0; i < topology->GetNHosts (); ++i)
    {
        Ptr<RoceHost> host = CreateObject<RoceHost> ();
        host->Setup (topology->GetHostDevice (i), static_cast<uint16_t> (i));
        m_hosts.push_back (host);
    }
    m_starts.SetStartCallback ([this] (uint64_t index) { StartFlow (m_flows[index]); });
    SetFlowTopology (topology);
}

void
RoceFlowTransport::DoAddFlow (const FlowSpec& flow)
{
    m_starts.Add (m_flows.size (), flow.startNs);
    m_flows.push_back (flow);
    m_starts.ScheduleNow ();
}

void
RoceFlowTransport::StartFlow (const FlowSpec& flow)
{
    NS_ABORT_MSG_IF (!m_senderPrototype,
                     "RoceFlowTransport: ConfigureFabric must run before flows start");
    const uint32_t echoIntBytes = m_ccKind == CC_HPCC ? kIntHeaderBytes : 0;
    Ptr<RoceReceiver> receiver = CopyObject<RoceReceiver> (m_receiverPrototype);
    receiver->Setup (m_hosts[flow.dstHost], flow.flowId, static_cast<uint16_t> (flow.srcHost),
                     flow.sizeBytes, m_payloadBytes, echoIntBytes);
    m_hosts[flow.dstHost]->AddReceiver (flow.flowId, receiver);

    Ptr<RoceSender> sender = CopyObject<RoceSender> (m_senderPrototype);
    // Each QP its own congestion control, with the attributes' configured values.
    Ptr<RoceCongestionControl> cc = m_ccFactory.Create<RoceCongestionControl> ();
    const uint64_t lineRate = m_topology->GetAccessRate ().GetBitRate ();
    sender->Setup (m_hosts[flow.srcHost], flow.flowId, static_cast<uint16_t> (flow.dstHost),
                   flow.sizeBytes, m_payloadBytes, cc, lineRate, m_baseRtt,
                   receiver->GetAckIntervalBytes ());
    m_hosts[flow.srcHost]->AddSender (flow.flowId, sender);
    m_active[flow.flowId] = Active{sender, receiver, flow.srcHost, flow.dstHost};
    if (m_read)
    {
        receiver->SendReadRequest (Simulator::Now ());
    }
    else
    {
        sender->Start ();
    }
}

void
RoceFlowTransport::OnFlowReceived (uint64_t flowId, Time received)
{
    NotifyFlowFinished (flowId);
}

void
RoceFlowTransport::OnFlowAcked (uint64_t flowId, Time acked)
{
    m_flowAckedTrace (flowId, acked);
    // Not from inside the sender's own call stack: the host holds its last reference.
    Simulator::ScheduleNow (&RoceFlowTransport::Release, this, flowId);
}

void
RoceFlowTransport::Release (uint64_t flowId)
{
    auto it = m_active.find (flowId);
    if (it == m_active.end ())
    {
        return;
    }
    const Active& active = it->second;
    m_released.dataPackets += active.sender->GetDataPacketsSent ();
    m_released.retransmitted += active.sender->GetRetransmittedPackets ();
    m_released.timeouts += active.sender->GetTimeouts ();
    m_released.nacks += active.receiver->GetNacksSent ();
    m_released.cnps += active.receiver->GetCnpsSent ();
    m_released.acks += active.receiver->GetAcksSent ();
    m_hosts[active.srcHost]->RemoveSender (flowId);
    m_hosts[active.dstHost]->RemoveReceiver (flowId);
    active.sender->Dispose ();
    m_active.erase (it);
}

RoceFlowTransport::Counters
RoceFlowTransport::Totals () const
{
    Counters total = m_released;
    for (const auto& [flowId, active] : m_active)
    {
        total.dataPackets += active.sender->GetDataPacketsSent ();
        total.retransmitted += active.sender->GetRetransmittedPackets ();
        total.timeouts += active.sender->GetTimeouts ();
        total.nacks += active.receiver->GetNacksSent ();
        total.cnps += active.receiver->GetCnpsSent ();
        total.acks += active.receiver->GetAcksSent ();
    }
    return total;
}

uint64_t
RoceFlowTransport::GetRetransmittedPackets () const
{
    return Totals ().retransmitted;
}

uint64_t
RoceFlowTransport::GetDataPacketsSent () const
{
    return Totals ().dataPackets;
}

Ptr<RoceSender>
RoceFlowTransport::GetSender (uint64_t flowId) const
{
    auto it = m_active.find (flowId);
    return it == m_active.end () ? nullptr : it->second.sender;
}

Ptr<RoceReceiver>
RoceFlowTransport::GetReceiver (uint64_t flowId) const
{
    auto it = m_active.find (flowId);
    return it == m_active.end () ? nullptr : it->second.receiver;
}

std::vector<std::pair<std::string, std::string>>
RoceFlowTransport::GetStatistics () const
{
    const Counters total = Totals ();
    uint64_t nicDrops = 0;
    for (const Ptr<RoceHost>& host : m_hosts)
    {
        nicDrops += host->GetNicDrops ();
    }
    return {
        {"roce.data_packets_sent", std::to_string (total.dataPackets)},
        {"roce.retransmitted_packets", std::to_string (total.retransmitted)},
        {"roce.timeouts", std::to_string (total.timeouts)},
        {"roce.nacks", std::to_string (total.nacks)},
        {"roce.cnps", std::to_string (total.cnps)},
        {"roce.acks", std::to_string (total.acks)},
        {"roce.host_nic_drops", std::to_string (nicDrops)},
        {"roce.flows_unacked", std::to_string (m_active.size ())},
    };
}

uint32_t
RoceFlowTransport::GetPerPacketHeaderBytes () const
{
    return kRoceDataHeaderBytes + (m_ccKind == CC_HPCC ? kIntHeaderBytes : 0);
}

uint32_t
RoceFlowTransport::GetMssBytes () const
{
    return m_payloadBytes != 0 ? m_payloadBytes : m_mssBytes;
}

Time
RoceFlowTransport::GetLoneFlowExtraDelay (const FlowSpec& flow) const
{
    if (!m_read || !m_topology)
    {
        return Time (0);
    }
    // The READ request (RETH as its "payload") from the data's destination to its source.
    const uint32_t requestBytes = kRoceReadRequestHeaderBytes;
    return m_topology->IdealFct (flow.dstHost, flow.srcHost, requestBytes, 0, requestBytes);
}

std::vector<TypeId>
RoceFlowTransport::GetConfigTypeIds () const
{
    std::vector<TypeId> ids = {GetInstanceTypeId (), RoceSender::GetTypeId (),
                               RoceReceiver::GetTypeId ()};
    if (m_ccKind == CC_DCQCN)
    {
        ids.push_back (RoceDcqcn::GetTypeId ());
    }
    else if (m_ccKind == CC_HPCC)
    {
        ids.push_back (RoceHpcc::GetTypeId ());
    }
    return ids;
}

std::vector<std::pair<std::string, std::string>>
RoceFlowTransport::GetDerivedConfig () const
{
    return {
        {"roce.base_rtt_ns", std::to_string (m_baseRtt.GetNanoSeconds ())},
        {"roce.port_mtu_bytes", std::to_string (m_portMtuBytes)},
        {"roce.active_mtu_bytes", std::to_string (m_activeMtuBytes)},
        {"roce.payload_bytes", std::to_string (m_payloadBytes)},
        {"roce.rto_ns",
         std::to_string (m_senderPrototype ? m_senderPrototype->GetRto ().GetNanoSeconds () : 0)},
    };
}

} // namespace ns3
