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
#include <cstdint>
#include <numeric>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE ("TcpFlowTransport");
NS_OBJECT_ENSURE_REGISTERED (TcpFlowTransport);

namespace
{
/// IPv4 (20 B) + TCP (20 B, no options: timestamps are off) headers of a data segment.
constexpr uint32_t kTcpIpv4HeaderBytes = 40;

const FlowTransportRegistrar g_tcpRegistrar (
    {"tcp-ns3", "TCP NewReno (ns-3 TcpNewReno, SACK) over DropTail switch ports: the reference "
                "of the lean `tcp`",
     &TcpFlowTransport::SetTcpDefaults,
     [] () -> Ptr<FlowTransport> { return CreateObject<TcpFlowTransport> (); },
     "ns3::TcpSocket::SegmentSize"});

const FlowTransportRegistrar g_dctcpRegistrar (
    {"dctcp-ns3", "DCTCP (ns-3 TcpDctcp, ECN) over switch ports marking CE above K: the "
                  "reference of the lean `dctcp`",
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
            .AddAttribute ("HostBufferBytes",
                           "Host NIC queue limit in wire bytes (sets ClosTopology::"
                           "HostBufferBytes); 0 = unlimited (default: a host stack holds data "
                           "back instead of dropping it, as for pFabric).  36864 = YAPS, the "
                           "pHost authors' simulator (coresim/node.cpp, py/run_experiments.py "
                           "queue_size 36864), whose host queues are switch ports (36 KB, "
                           "dropping, CE-marking above K for dctcp).  On the DDC traces a 36 KB "
                           "NIC drops the page bursts of a blade (memcached-ycsb at 40 Gbps: mean "
                           "slowdown 2.42 -> 23.5); unlimited, a long flow's excess window queues "
                           "in its own NIC (doc/tcp.md)",
                           UintegerValue (0),
                           MakeUintegerAccessor (&TcpFlowTransport::m_hostBufferBytes),
                           MakeUintegerChecker<uint32_t> ())
            .AddAttribute ("WarmupTime",
                           "Least simulation time of trace time 0; 0 = as long as the handshake "
                           "schedule needs (-(first round) x HandshakeSlot)",
                           TimeValue (Time (0)), MakeTimeAccessor (&TcpFlowTransport::m_warmup),
                           MakeTimeChecker ())
            .AddAttribute ("OpenHorizon",
                           "Least time from a connection's SYN to its flow's start: 5 ms > "
                           "ConnTimeout (1 ms) + its doubled backoff (2 ms), so a handshake "
                           "that loses a SYN or SYN-ACK twice in a full buffer still completes "
                           "in time (transports/tcp/doc/tcp.md)",
                           TimeValue (MilliSeconds (5)),
                           MakeTimeAccessor (&TcpFlowTransport::m_horizon),
                           MakeTimeChecker (Time (0)))
            .AddAttribute ("HandshakeSlot",
                           "Length of one handshake round (>> one handshake, ~3.5 us inter-rack)",
                           TimeValue (MicroSeconds (10)),
                           MakeTimeAccessor (&TcpFlowTransport::m_slot),
                           MakeTimeChecker (PicoSeconds (1)))
            .AddAttribute ("HandshakesPerSlot",
                           "Most handshakes a host takes part in (as client or server) per "
                           "round",
                           UintegerValue (4),
                           MakeUintegerAccessor (&TcpFlowTransport::m_handshakesPerSlot),
                           MakeUintegerChecker<uint32_t> (1))
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
    const double bdpBytes = topology->BdpBytes (kTcpIpv4HeaderBytes, mssBytes);
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
    SetTcpPorts (topology, m_markThresholdBytes, m_hostBufferBytes,
                 "ns3::TcpFlowTransport::HostBufferBytes");
}

void
TcpFlowTransport::SetTcpPorts (Ptr<ClosTopology> topology, uint32_t markThresholdBytes,
                               uint32_t hostBufferBytes, const std::string& hostBufferAttribute)
{
    ObjectFactory switchQueue;
    switchQueue.SetTypeId (DropTailEcnQueue::GetTypeId ());
    switchQueue.Set ("MarkThresholdBytes", UintegerValue (markThresholdBytes));
    topology->SetSwitchQueue (switchQueue);
    // With a host buffer limit the host NICs are the switch ports' queue, as in YAPS (every
    // host queue has the switches' queue_type, DCTCP-marking for DCTCP); an unlimited NIC
    // neither drops nor marks, like a host stack (doc/tcp.md).
    ObjectFactory hostQueue;
    hostQueue.SetTypeId (DropTailEcnQueue::GetTypeId ());
    hostQueue.Set ("MarkThresholdBytes",
                   UintegerValue (hostBufferBytes > 0 ? markThresholdBytes : 0));
    topology->SetHostQueue (hostQueue);
    // The topology applies HostBufferBytes as the host queues' MaxBytes.
    ApplyHostBufferBytes (topology, hostBufferBytes, hostBufferAttribute);
}

void
TcpFlowTransport::Install (Ptr<ClosTopology> topology)
{
    m_topology = topology;
    m_hostConnections.assign (topology->GetNHosts (), 0);
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
    SetFlowTopology (topology);
}

void
TcpFlowTransport::DoAddFlow (const FlowSpec& flow)
{
    NS_ABORT_MSG_IF (m_begun && Simulator::Now ().IsStrictlyPositive (),
                     "TcpFlowTransport: AddFlow() after the simulation started");
    m_flows.push_back (flow);
    m_scheduled = false;
    if (!m_begun)
    {
        m_begun = true;
        Simulator::Schedule (Time (0), &TcpFlowTransport::Begin, this);
    }
}

void
TcpFlowTransport::ScheduleHandshakes () const
{
    // As late as possible: in decreasing start order, the latest round not after the flow's
    // deadline round and not after either host's current round in which neither host already
    // takes part in HandshakesPerSlot handshakes.  Deadlines do not increase in this order, so
    // per host the rounds only decrease and each (host, round) holds at most HandshakesPerSlot
    // handshakes (the mirror image of a greedy first-fit schedule).
    std::vector<uint64_t> order (m_flows.size ());
    std::iota (order.begin (), order.end (), uint64_t (0));
    std::stable_sort (order.begin (), order.end (),
                      [this] (uint64_t a, uint64_t b)
                      { return m_flows[a].startNs > m_flows[b].startNs; });
    const int64_t slotPs = m_slot.GetPicoSeconds ();
    std::vector<int64_t> hostRound (m_topology->GetNHosts (), INT64_MAX);
    std::vector<uint32_t> hostRoundCount (m_topology->GetNHosts (), 0);
    auto lastFree = [&] (uint32_t host)
    { return hostRoundCount[host] < m_handshakesPerSlot ? hostRound[host] : hostRound[host] - 1; };
    m_flowRound.assign (m_flows.size (), 0);
    m_firstRound = 0;
    for (uint64_t index : order)
    {
        const FlowSpec& flow = m_flows[index];
        const int64_t latestPs =
            NanoSeconds (flow.startNs).GetPicoSeconds () - m_horizon.GetPicoSeconds ();
        // floor (latestPs / slotPs)
        const int64_t deadline = latestPs / slotPs - (latestPs % slotPs < 0 ? 1 : 0);
        const int64_t round =
            std::min ({deadline, lastFree (flow.srcHost), lastFree (flow.dstHost)});
        for (uint32_t host : {flow.srcHost, flow.dstHost})
        {
            if (round < hostRound[host])
            {
                hostRound[host] = round;
                hostRoundCount[host] = 0;
            }
            ++hostRoundCount[host];
        }
        m_flowRound[index] = round;
        m_firstRound = std::min (m_firstRound, round);
    }
    m_scheduled = true;
}

Time
TcpFlowTransport::NeededWarmup () const
{
    if (!m_scheduled)
    {
        ScheduleHandshakes ();
    }
    return std::max (m_warmup, m_slot * std::max<int64_t> (1, -m_firstRound));
}

void
TcpFlowTransport::Begin ()
{
    const Time origin = GetTraceOrigin ();
    NS_ABORT_MSG_IF (NeededWarmup () > origin,
                     "TcpFlowTransport: the handshakes of "
                         << m_flows.size () << " flows need a warm-up of "
                         << NeededWarmup ().As (Time::US) << " (first round " << m_firstRound
                         << " of " << m_slot.As (Time::US) << "), but trace time 0 was fixed at "
                         << origin.As (Time::US)
                         << " before the flows were added; call GetTraceOrigin() after the "
                            "last AddFlow() or set --ns3::TcpFlowTransport::WarmupTime="
                         << NeededWarmup ().GetMicroSeconds () << "us");
    const auto byRound = [this] (uint64_t a, uint64_t b)
    { return m_flowRound[a] < m_flowRound[b]; };
    m_openOrder.resize (m_flows.size ());
    for (uint64_t i = 0; i < m_flows.size (); ++i)
    {
        m_openOrder[i] = i;
        m_starts.Add (i, m_flows[i].startNs);
    }
    std::stable_sort (m_openOrder.begin (), m_openOrder.end (), byRound);
    m_senders.resize (m_flows.size ());
    if (!m_openOrder.empty ())
    {
        Simulator::Schedule (origin + m_slot * m_flowRound[m_openOrder[0]] - Simulator::Now (),
                             &TcpFlowTransport::OpenRound, this);
    }
    // One time step early: TcpSocketBase::Send defers SendPendingData by TimeStep(1).
    m_starts.SetOrigin (origin, TimeStep (1));
    m_starts.SetStartCallback ([this] (uint64_t index) { StartFlow (index); });
    m_starts.Begin ();
}

void
TcpFlowTransport::OpenRound ()
{
    // All SYNs of a round leave at the round's start; a host sends or receives at most
    // HandshakesPerSlot of them, so no port ever holds more than a few 58 B SYNs / SYN-ACKs.
    const int64_t round = m_flowRound[m_openOrder[m_nextOpen]];
    const bool warmup = round < 0;
    while (m_nextOpen < m_openOrder.size () && m_flowRound[m_openOrder[m_nextOpen]] == round)
    {
        const uint64_t index = m_openOrder[m_nextOpen++];
        const FlowSpec& flow = m_flows[index];
        Address remote = InetSocketAddress (FabricHostIpv4Address (flow.dstHost), m_port);
        Ptr<TcpFlowSender> sender =
            Create<TcpFlowSender> (index, flow, m_topology->GetHost (flow.srcHost), remote,
                                   m_mssBytes, MakeCallback (&TcpFlowTransport::SenderBound, this));
        m_senders[index] = sender;
        sender->Open ();
        m_warmupConnections += warmup ? 1 : 0;
        for (uint32_t host : {flow.srcHost, flow.dstHost})
        {
            m_peakHostConnections = std::max (m_peakHostConnections, ++m_hostConnections[host]);
        }
    }
    if (m_nextOpen < m_openOrder.size ())
    {
        const int64_t next = m_flowRound[m_openOrder[m_nextOpen]];
        Simulator::Schedule (m_slot * (next - round), &TcpFlowTransport::OpenRound, this);
    }
    else
    {
        m_flowRound.clear ();
        m_flowRound.shrink_to_fit ();
        m_openOrder.clear ();
        m_openOrder.shrink_to_fit ();
    }
}

void
TcpFlowTransport::StartFlow (uint64_t flowIndex)
{
    Ptr<TcpFlowSender> sender = m_senders[flowIndex];
    NS_ASSERT (sender);
    sender->Start ();
    if (!sender->WasConnectedAtStart ())
    {
        ++m_lateConnections;
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
    // Both ends have closed (the sender after its last byte, the receiver now); each frees
    // its endpoint after TIME_WAIT.
    if (m_senders[flowIndex])
    {
        m_senders[flowIndex]->Release ();
        m_senders[flowIndex] = nullptr;
    }
    const FlowSpec& flow = m_flows[flowIndex];
    --m_hostConnections[flow.srcHost];
    --m_hostConnections[flow.dstHost];
    NotifyFlowFinished (flow.flowId);
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
    if (!m_originFixed)
    {
        m_originFixed = true;
        m_origin = m_flows.empty () && m_warmup.IsZero () ? MicroSeconds (kUnsizedWarmupUs)
                                                          : NeededWarmup ();
    }
    return m_origin;
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
    return {{"late_connections", std::to_string (m_lateConnections)},
            {"connections", std::to_string (m_flows.size ())},
            {"warmup_connections", std::to_string (m_warmupConnections)},
            {"peak_host_connections", std::to_string (m_peakHostConnections)},
            {"warmup_ns", std::to_string (GetTraceOrigin ().GetNanoSeconds ())}};
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
