/*
 * disaggsim: TCP NewReno / DCTCP flows over the Clos fabric.
 */
#include "tcp-flow-transport.h"

#include "topologies/model/drop-tail-ecn-queue.h"
#include "topologies/model/fabric-header.h"

#include "ns3/boolean.h"
#include "ns3/config.h"
#include "ns3/double.h"
#include "ns3/enum.h"
#include "ns3/inet-socket-address.h"
#include "ns3/internet-stack-helper.h"
#include "ns3/ipv4-static-routing-helper.h"
#include "ns3/ipv4.h"
#include "ns3/log.h"
#include "ns3/rtt-estimator.h"
#include "ns3/simulator.h"
#include "ns3/tcp-congestion-ops.h"
#include "ns3/tcp-dctcp.h"
#include "ns3/tcp-l4-protocol.h"
#include "ns3/tcp-socket-base.h"
#include "ns3/tcp-socket.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <cmath>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE ("TcpFlowTransport");
NS_OBJECT_ENSURE_REGISTERED (TcpFlowTransport);

namespace
{
/// IPv4 (20 B) + TCP (20 B, no options: timestamps are off) headers of a data segment.
constexpr uint32_t kTcpIpv4HeaderBytes = 40;

const FlowTransportRegistrar g_tcpRegistrar (
    {"tcp", "TCP NewReno (ns-3 TcpNewReno, SACK) over DropTail switch ports",
     &TcpFlowTransport::SetTcpDefaults,
     [] () -> Ptr<FlowTransport> { return CreateObject<TcpFlowTransport> (); },
     "ns3::TcpSocket::SegmentSize"});

const FlowTransportRegistrar g_dctcpRegistrar (
    {"dctcp", "DCTCP (ns-3 TcpDctcp, ECN) over switch ports marking CE above K",
     &TcpFlowTransport::SetDctcpDefaults,
     [] () -> Ptr<FlowTransport> { return CreateObject<TcpFlowTransport> (); },
     "ns3::TcpSocket::SegmentSize"});
} // namespace

TypeId
TcpFlowTransport::GetTypeId ()
{
    static TypeId tid =
        TypeId ("ns3::TcpFlowTransport")
            .SetParent<FlowTransport> ()
            .SetGroupName ("Disaggsim")
            .AddConstructor<TcpFlowTransport> ()
            .AddAttribute (
                "CongestionControl", "TcpCongestionOps of every socket (TcpL4Protocol::SocketType)",
                TypeIdValue (TcpNewReno::GetTypeId ()),
                MakeTypeIdAccessor (&TcpFlowTransport::m_congestionControl), MakeTypeIdChecker ())
            .AddAttribute (
                "EcnMarking", "Switch ports CE-mark ECT packets above MarkThresholdBytes",
                BooleanValue (false), MakeBooleanAccessor (&TcpFlowTransport::m_ecnMarking),
                MakeBooleanChecker ())
            .AddAttribute ("MarkThresholdBytes",
                           "DCTCP K in wire bytes; 0 = derived from the topology "
                           "(K > C x RTT / 7, Alizadeh et al. SIGCOMM'10 §3.4)",
                           UintegerValue (0),
                           MakeUintegerAccessor (&TcpFlowTransport::m_markThresholdAttr),
                           MakeUintegerChecker<uint32_t> ())
            .AddAttribute ("WarmupTime",
                           "Simulation time of trace time 0 (connections of the first flows "
                           "open during it)",
                           TimeValue (MicroSeconds (100)),
                           MakeTimeAccessor (&TcpFlowTransport::m_warmup), MakeTimeChecker ())
            .AddAttribute ("ConnectLead",
                           "How long before its start a flow's connection is opened (at most "
                           "WarmupTime)",
                           TimeValue (MicroSeconds (100)),
                           MakeTimeAccessor (&TcpFlowTransport::m_connectLead), MakeTimeChecker ())
            .AddAttribute ("Port", "TCP port every host listens on", UintegerValue (5000),
                           MakeUintegerAccessor (&TcpFlowTransport::m_port),
                           MakeUintegerChecker<uint16_t> (1));
    return tid;
}

TcpFlowTransport::TcpFlowTransport () = default;

TcpFlowTransport::~TcpFlowTransport () = default;

void
TcpFlowTransport::SetTcpDefaults ()
{
    // Every value and its source: transports/tcp/doc/tcp.md.
    Config::SetDefault ("ns3::TcpSocket::SegmentSize", UintegerValue (1460));
    Config::SetDefault ("ns3::TcpSocket::InitialCwnd", UintegerValue (10));
    Config::SetDefault ("ns3::TcpSocket::SndBufSize", UintegerValue (2 << 20));
    Config::SetDefault ("ns3::TcpSocket::RcvBufSize", UintegerValue (2 << 20));
    Config::SetDefault ("ns3::TcpSocket::DelAckCount", UintegerValue (2));
    Config::SetDefault ("ns3::TcpSocket::DelAckTimeout", TimeValue (MicroSeconds (1)));
    Config::SetDefault ("ns3::TcpSocket::ConnTimeout", TimeValue (MilliSeconds (1)));
    Config::SetDefault ("ns3::TcpSocketBase::MinRto", TimeValue (MicroSeconds (200)));
    Config::SetDefault ("ns3::TcpSocketBase::ClockGranularity", TimeValue (MicroSeconds (1)));
    Config::SetDefault ("ns3::TcpSocketBase::Sack", BooleanValue (true));
    Config::SetDefault ("ns3::TcpSocketBase::Timestamp", BooleanValue (false));
    Config::SetDefault ("ns3::TcpSocketBase::WindowScaling", BooleanValue (true));
    Config::SetDefault ("ns3::TcpSocketBase::MaxSegLifetime", DoubleValue (100e-6));
    Config::SetDefault ("ns3::TcpSocketBase::UseEcn", EnumValue (TcpSocketState::Off));
    Config::SetDefault ("ns3::RttEstimator::InitialEstimation", TimeValue (MicroSeconds (100)));
    Config::SetDefault ("ns3::TcpFlowTransport::CongestionControl",
                        TypeIdValue (TcpNewReno::GetTypeId ()));
    Config::SetDefault ("ns3::TcpFlowTransport::EcnMarking", BooleanValue (false));
}

void
TcpFlowTransport::SetDctcpDefaults ()
{
    SetTcpDefaults ();
    Config::SetDefault ("ns3::TcpFlowTransport::CongestionControl",
                        TypeIdValue (TcpDctcp::GetTypeId ()));
    Config::SetDefault ("ns3::TcpFlowTransport::EcnMarking", BooleanValue (true));
    Config::SetDefault ("ns3::TcpSocketBase::UseEcn", EnumValue (TcpSocketState::On));
    // g = 1/16 (Alizadeh et al. SIGCOMM'10 §3.1).
    Config::SetDefault ("ns3::TcpDctcp::DctcpShiftG", DoubleValue (1.0 / 16));
}

uint32_t
TcpFlowTransport::DctcpMarkThresholdBytes (Ptr<const ClosTopology> topology, uint32_t mssBytes)
{
    uint32_t src = 0;
    uint32_t dst = topology->GetNRacks () > 1 ? topology->GetHostsPerRack ()
                                              : std::min<uint32_t> (1, topology->GetNHosts () - 1);
    Time rtt = topology->IdealFct (src, dst, mssBytes, kTcpIpv4HeaderBytes, mssBytes) +
               topology->IdealFct (dst, src, 0, kTcpIpv4HeaderBytes, mssBytes);
    const double bdpBytes =
        static_cast<double> (topology->GetAccessRate ().GetBitRate ()) * rtt.GetSeconds () / 8.0;
    const uint32_t packetBytes = mssBytes + kTcpIpv4HeaderBytes + kFabricHeaderBytes;
    auto packets = static_cast<uint32_t> (std::ceil (bdpBytes / 7.0 / packetBytes));
    return std::max<uint32_t> (1, packets) * packetBytes;
}

void
TcpFlowTransport::ConfigureFabric (Ptr<ClosTopology> topology)
{
    // The MSS is the sockets' SegmentSize default (set by SetTcpDefaults or the command line).
    TypeId::AttributeInformation info;
    NS_ABORT_UNLESS (TcpSocket::GetTypeId ().LookupAttributeByName ("SegmentSize", &info));
    m_mssBytes = DynamicCast<const UintegerValue> (info.initialValue)->Get ();
    m_markThresholdBytes = 0;
    if (m_ecnMarking)
    {
        m_markThresholdBytes = m_markThresholdAttr != 0
                                   ? m_markThresholdAttr
                                   : DctcpMarkThresholdBytes (topology, m_mssBytes);
    }
    ObjectFactory switchQueue;
    switchQueue.SetTypeId (DropTailEcnQueue::GetTypeId ());
    switchQueue.Set ("MarkThresholdBytes", UintegerValue (m_markThresholdBytes));
    topology->SetSwitchQueue (switchQueue);
    ObjectFactory hostQueue;
    hostQueue.SetTypeId (DropTailEcnQueue::GetTypeId ());
    hostQueue.Set ("MarkThresholdBytes", UintegerValue (0));
    topology->SetHostQueue (hostQueue);
}

void
TcpFlowTransport::Install (Ptr<ClosTopology> topology)
{
    NS_ABORT_MSG_IF (m_connectLead > m_warmup, "TcpFlowTransport: ConnectLead ("
                                                   << m_connectLead.As (Time::US)
                                                   << ") exceeds WarmupTime ("
                                                   << m_warmup.As (Time::US) << ")");
    m_topology = topology;
    InternetStackHelper stack;
    stack.SetIpv6StackInstall (false);
    Ipv4StaticRoutingHelper staticRouting;
    stack.SetRoutingHelper (staticRouting);
    stack.Install (topology->GetHosts ());
    const Ipv4Mask fabricMask ("255.0.0.0");
    for (uint32_t h = 0; h < topology->GetNHosts (); ++h)
    {
        Ptr<Node> node = topology->GetHost (h);
        Ptr<Ipv4> ipv4 = node->GetObject<Ipv4> ();
        // By hand, not Ipv4AddressHelper::Assign (which would install an FqCoDel queue disc).
        int32_t interface = ipv4->AddInterface (topology->GetHostDevice (h));
        ipv4->AddAddress (interface, Ipv4InterfaceAddress (FabricHostIpv4Address (h), fabricMask));
        ipv4->SetUp (interface);
        node->GetObject<TcpL4Protocol> ()->SetAttribute ("SocketType",
                                                         TypeIdValue (m_congestionControl));
        Ptr<TcpFlowReceiver> receiver = Create<TcpFlowReceiver> (
            node, m_port, MakeCallback (&TcpFlowTransport::FlowFinished, this));
        receiver->Listen ();
        m_receivers.push_back (receiver);
    }
}

void
TcpFlowTransport::AddFlow (const FlowSpec& flow)
{
    NS_ABORT_MSG_IF (!m_topology, "TcpFlowTransport: Install() before AddFlow()");
    NS_ABORT_MSG_IF (flow.srcHost >= m_topology->GetNHosts () ||
                         flow.dstHost >= m_topology->GetNHosts (),
                     "TcpFlowTransport: flow " << flow.flowId << " has a host out of range");
    NS_ABORT_MSG_IF (flow.srcHost == flow.dstHost,
                     "TcpFlowTransport: flow " << flow.flowId << " has src_host == dst_host");
    NS_ABORT_MSG_IF (flow.sizeBytes == 0, "TcpFlowTransport: flow " << flow.flowId << " is empty");
    m_flows.push_back (flow);
    if (!m_begun)
    {
        m_begun = true;
        Simulator::Schedule (Time (0), &TcpFlowTransport::Begin, this);
    }
}

void
TcpFlowTransport::Begin ()
{
    m_openOrder.resize (m_flows.size ());
    for (uint64_t i = 0; i < m_flows.size (); ++i)
    {
        m_openOrder[i] = i;
    }
    std::stable_sort (m_openOrder.begin (), m_openOrder.end (),
                      [this] (uint64_t a, uint64_t b)
                      { return m_flows[a].startNs < m_flows[b].startNs; });
    m_senders.resize (m_flows.size ());
    OpenDue ();
}

void
TcpFlowTransport::OpenDue ()
{
    const Time now = Simulator::Now ();
    auto openTime = [this] (uint64_t index)
    {
        Time t = m_warmup + NanoSeconds (m_flows[index].startNs) - m_connectLead;
        return t.IsStrictlyNegative () ? Time (0) : t;
    };
    while (m_nextOpen < m_openOrder.size () && openTime (m_openOrder[m_nextOpen]) <= now)
    {
        uint64_t index = m_openOrder[m_nextOpen++];
        const FlowSpec& flow = m_flows[index];
        Address remote = InetSocketAddress (FabricHostIpv4Address (flow.dstHost), m_port);
        Ptr<TcpFlowSender> sender =
            Create<TcpFlowSender> (index, flow, m_topology->GetHost (flow.srcHost), remote,
                                   m_mssBytes, MakeCallback (&TcpFlowTransport::SenderBound, this));
        m_senders[index] = sender;
        sender->Open ();
        // One time step early: TcpSocketBase::Send defers SendPendingData by TimeStep(1).
        Time start = m_warmup + NanoSeconds (flow.startNs) - TimeStep (1);
        Simulator::Schedule (start - now, &TcpFlowSender::Start, sender);
        Simulator::Schedule (start - now + TimeStep (1),
                             [this, sender] ()
                             {
                                 if (!sender->WasConnectedAtStart ())
                                 {
                                     ++m_lateConnections;
                                 }
                             });
    }
    if (m_nextOpen < m_openOrder.size ())
    {
        Simulator::Schedule (openTime (m_openOrder[m_nextOpen]) - now, &TcpFlowTransport::OpenDue,
                             this);
    }
}

void
TcpFlowTransport::SenderBound (uint64_t flowIndex, uint16_t port)
{
    const FlowSpec& flow = m_flows[flowIndex];
    m_receivers[flow.dstHost]->Expect (flow.srcHost, port, flowIndex, flow.sizeBytes);
}

void
TcpFlowTransport::FlowFinished (uint64_t flowIndex)
{
    if (m_senders[flowIndex])
    {
        m_senders[flowIndex]->Release ();
        m_senders[flowIndex] = nullptr;
    }
    NotifyFlowFinished (m_flows[flowIndex].flowId);
}

uint32_t
TcpFlowTransport::GetPerPacketHeaderBytes () const
{
    return kTcpIpv4HeaderBytes;
}

uint32_t
TcpFlowTransport::GetMssBytes () const
{
    return m_mssBytes;
}

Time
TcpFlowTransport::GetTraceOrigin () const
{
    return m_warmup;
}

std::vector<TypeId>
TcpFlowTransport::GetConfigTypeIds () const
{
    return {GetTypeId (),
            TcpSocket::GetTypeId (),
            TcpSocketBase::GetTypeId (),
            RttEstimator::GetTypeId (),
            m_congestionControl,
            DropTailEcnQueue::GetTypeId ()};
}

std::vector<std::pair<std::string, std::string>>
TcpFlowTransport::GetDerivedConfig () const
{
    return {{"switch_mark_threshold_bytes", std::to_string (m_markThresholdBytes)},
            {"mss_bytes", std::to_string (m_mssBytes)},
            {"per_packet_header_bytes", std::to_string (kTcpIpv4HeaderBytes)}};
}

std::vector<std::pair<std::string, std::string>>
TcpFlowTransport::GetStatistics () const
{
    return {{"late_connections", std::to_string (m_lateConnections)}};
}

void
TcpFlowTransport::DoDispose ()
{
    for (auto& sender : m_senders)
    {
        if (sender)
        {
            sender->Release ();
        }
    }
    m_senders.clear ();
    for (auto& receiver : m_receivers)
    {
        receiver->Stop ();
    }
    m_receivers.clear ();
    m_topology = nullptr;
    FlowTransport::DoDispose ();
}

} // namespace ns3
