/*
 * disaggsim: lean TCP / DCTCP as a FlowTransport (protocol names "tcp", "dctcp"; formerly "tcp-lean", "dctcp-lean").
 */
#include "tcp-lean-helper.h"

#include "topologies/model/drop-tail-ecn-queue.h"
#include "transports/tcp-lean/model/tcp-lean-header.h"
#include "transports/tcp/helper/tcp-flow-transport.h"

#include "ns3/abort.h"
#include "ns3/boolean.h"
#include "ns3/config.h"
#include "ns3/double.h"
#include "ns3/log.h"
#include "ns3/simulator.h"
#include "ns3/uinteger.h"

namespace ns3
{

NS_LOG_COMPONENT_DEFINE ("TcpLeanFlowTransport");
NS_OBJECT_ENSURE_REGISTERED (TcpLeanFlowTransport);

namespace
{
const FlowTransportRegistrar g_tcpLeanRegistrar ({
    "tcp",
    "TCP NewReno with SACK (RFC 5681, 6675, 6298) on the fabric's frame path, no IP stack "
    "(transports/tcp-lean/doc/tcp-lean.md; ns-3's own stack: tcp-ns3)",
    &TcpLeanFlowTransport::SetTcpDefaults,
    [] { return Ptr<FlowTransport> (CreateObject<TcpLeanFlowTransport> ()); },
    "ns3::TcpLeanFlowTransport::MssBytes",
    "tcp-lean",
});

const FlowTransportRegistrar g_dctcpLeanRegistrar ({
    "dctcp",
    "DCTCP (RFC 8257) on the lean TCP, switch ports marking CE above K "
    "(transports/tcp-lean/doc/tcp-lean.md; ns-3's own stack: dctcp-ns3)",
    &TcpLeanFlowTransport::SetDctcpDefaults,
    [] { return Ptr<FlowTransport> (CreateObject<TcpLeanFlowTransport> ()); },
    "ns3::TcpLeanFlowTransport::MssBytes",
    "dctcp-lean",
});

/// The TCP port every `tcp-ns3` host listens on (TcpFlowTransport::Port's default).
constexpr uint16_t kNs3ListenPort = 5000;
/// ns-3's Ipv4EndPointDemux ephemeral range 49152-65535; the first port it gives is 49153.
constexpr uint32_t kEphemeralFirst = 49152;
constexpr uint32_t kEphemeralCount = 16384;
constexpr uint8_t kTcpIpProtocol = 6;
} // namespace

TypeId
TcpLeanFlowTransport::GetTypeId ()
{
    static TypeId tid =
        TypeId ("ns3::TcpLeanFlowTransport")
            .SetParent<FlowTransport> ()
            .SetGroupName ("Disaggsim")
            .AddConstructor<TcpLeanFlowTransport> ()
            .AddAttribute ("Dctcp",
                           "DCTCP (RFC 8257): ECT data, switch ports CE-marking above K, the "
                           "window cut by alpha/2 once per window, Linux Reno growth (ns-3's "
                           "TcpDctcp base); false = NewReno over drop-tail ports",
                           BooleanValue (false),
                           MakeBooleanAccessor (&TcpLeanFlowTransport::m_dctcp),
                           MakeBooleanChecker ())
            .AddAttribute ("MssBytes",
                           "Payload bytes per segment (tcp-ns3: TcpSocket::SegmentSize 1460 = "
                           "1500 B MTU - 40 B IPv4 + TCP headers)",
                           UintegerValue (1460),
                           MakeUintegerAccessor (&TcpLeanFlowTransport::m_mssBytes),
                           MakeUintegerChecker<uint32_t> (1, 9000))
            .AddAttribute ("InitialCwnd", "Initial window in segments (RFC 6928; tcp-ns3: 10)",
                           UintegerValue (10),
                           MakeUintegerAccessor (&TcpLeanFlowTransport::m_initialCwnd),
                           MakeUintegerChecker<uint32_t> (1))
            .AddAttribute ("DupAckThreshold", "DupThresh (RFC 6675 §2; ns-3 ReTxThreshold 3)",
                           UintegerValue (3),
                           MakeUintegerAccessor (&TcpLeanFlowTransport::m_dupThresh),
                           MakeUintegerChecker<uint32_t> (1))
            .AddAttribute ("Prr",
                           "Fast recovery sends per Proportional Rate Reduction (RFC 6937), "
                           "ns-3's default TcpPrrRecovery (tcp-ns3); false = RFC 6675 §5 alone "
                           "(cwnd = ssthresh at entry, send while pipe < cwnd)",
                           BooleanValue (true),
                           MakeBooleanAccessor (&TcpLeanFlowTransport::m_prr),
                           MakeBooleanChecker ())
            .AddAttribute ("Ns3DctcpEce",
                           "DCTCP reacts to ECE as ns-3.37 (tcp-ns3's dctcp): in any state but "
                           "CWR, fast recovery and after an RTO included, and cuts to "
                           "cwnd (1 - alpha/2) with no 2-segment floor (TcpSocketBase::EnterCwr, "
                           "TcpDctcp::GetSsThresh); false = RFC 8257 section 3.3 as Linux "
                           "(Open state only, at least 2 segments)",
                           BooleanValue (true),
                           MakeBooleanAccessor (&TcpLeanFlowTransport::m_ns3DctcpEce),
                           MakeBooleanChecker ())
            .AddAttribute ("Ns3PipeSsthresh",
                           "NewReno's fast-recovery ssthresh = max(pipe / 2, 2 MSS) as ns-3.37's "
                           "EnterRecovery (BytesInFlight, RFC 6675 pipe) instead of RFC 5681 "
                           "eq. (4)'s FlightSize / 2",
                           BooleanValue (true),
                           MakeBooleanAccessor (&TcpLeanFlowTransport::m_ns3PipeSsthresh),
                           MakeBooleanChecker ())
            .AddAttribute ("Ns3Disorder",
                           "ns-3.37's Disorder state: an ACK carrying new SACK information "
                           "counts towards DupThresh even when it advances SND.UNA and does not "
                           "grow the window (TcpSocketBase::ProcessAck); false = RFC 6675 §2 / "
                           "RFC 5681 (every cumulative ACK resets DupAcks and grows the window)",
                           BooleanValue (true),
                           MakeBooleanAccessor (&TcpLeanFlowTransport::m_ns3Disorder),
                           MakeBooleanChecker ())
            .AddAttribute ("MinRto",
                           "Lower bound of the RTO (RFC 6298 §2.4 with the datacenter value of "
                           "tcp-ns3: TcpSocketBase::MinRto 200 us, transports/tcp/doc/tcp.md)",
                           TimeValue (MicroSeconds (200)),
                           MakeTimeAccessor (&TcpLeanFlowTransport::m_minRto),
                           MakeTimeChecker (Time (0)))
            .AddAttribute ("InitialRto",
                           "RTO until the first RTT sample (RFC 6298 §2.1, 1 s for the "
                           "Internet).  200 us = what tcp-ns3's sockets start their data with: "
                           "ns-3.37 TcpSocketBase::SendEmptyPacket sets RTO = max(MinRto, "
                           "estimate + max(G, 4 var)) on the handshake's last ACK, from an "
                           "estimator with no sample (InitialEstimation 100 us, var 0)",
                           TimeValue (MicroSeconds (200)),
                           MakeTimeAccessor (&TcpLeanFlowTransport::m_initialRto),
                           MakeTimeChecker (Time (1)))
            .AddAttribute ("ClockGranularity",
                           "G of RFC 6298 §2 (tcp-ns3: TcpSocketBase::ClockGranularity 1 us)",
                           TimeValue (MicroSeconds (1)),
                           MakeTimeAccessor (&TcpLeanFlowTransport::m_clockGranularity),
                           MakeTimeChecker (Time (0)))
            .AddAttribute ("DelAckCount",
                           "ACK at least every this many in-order segments (RFC 1122 "
                           "§4.2.3.2, RFC 5681 §4.2; tcp-ns3: TcpSocket::DelAckCount 2)",
                           UintegerValue (2),
                           MakeUintegerAccessor (&TcpLeanFlowTransport::m_delAckCount),
                           MakeUintegerChecker<uint32_t> (1))
            .AddAttribute ("DelAckTimeout",
                           "Delayed-ACK timer (tcp-ns3: TcpSocket::DelAckTimeout 1 us, below "
                           "one base RTT)",
                           TimeValue (MicroSeconds (1)),
                           MakeTimeAccessor (&TcpLeanFlowTransport::m_delAckTimeout),
                           MakeTimeChecker (Time (0)))
            .AddAttribute ("DctcpG",
                           "DCTCP's estimation gain g (RFC 8257 §4.2; Alizadeh et al. "
                           "SIGCOMM'10 §3.1: 1/16)",
                           DoubleValue (1.0 / 16),
                           MakeDoubleAccessor (&TcpLeanFlowTransport::m_dctcpG),
                           MakeDoubleChecker<double> (0, 1))
            .AddAttribute ("DctcpAlphaOnInit",
                           "DCTCP's initial alpha (RFC 8257 §3.3; Linux dctcp_alpha_on_init "
                           "and ns-3 TcpDctcp::DctcpAlphaOnInit: 1)",
                           DoubleValue (1.0),
                           MakeDoubleAccessor (&TcpLeanFlowTransport::m_dctcpAlphaInit),
                           MakeDoubleChecker<double> (0, 1))
            .AddAttribute ("MarkThresholdBytes",
                           "DCTCP K in wire bytes; 0 = derived from the topology as tcp-ns3 "
                           "does (K > C x RTT / 7, Alizadeh et al. SIGCOMM'10 §3.4)",
                           UintegerValue (0),
                           MakeUintegerAccessor (&TcpLeanFlowTransport::m_markThresholdAttr),
                           MakeUintegerChecker<uint32_t> ())
            .AddAttribute ("HostBufferBytes",
                           "Host NIC queue limit in wire bytes; 0 = unlimited (tcp-ns3's "
                           "default; 36864 = YAPS, transports/tcp/doc/tcp.md)",
                           UintegerValue (0),
                           MakeUintegerAccessor (&TcpLeanFlowTransport::m_hostBufferBytes),
                           MakeUintegerChecker<uint32_t> ())
            .AddAttribute ("Ns3EcmpPaths",
                           "Give each flow the ECMP path ns-3's TCP gives it: the hash of its "
                           "5-tuple with the ephemeral port ns-3 would allocate (49153 + the "
                           "source host's connection count, in flow order) and port 5000; "
                           "false = a hash of the flow id",
                           BooleanValue (true),
                           MakeBooleanAccessor (&TcpLeanFlowTransport::m_ns3Ports),
                           MakeBooleanChecker ());
    return tid;
}

TcpLeanFlowTransport::TcpLeanFlowTransport () = default;

TcpLeanFlowTransport::~TcpLeanFlowTransport () = default;

void
TcpLeanFlowTransport::SetTcpDefaults ()
{
    Config::SetDefault ("ns3::TcpLeanFlowTransport::Dctcp", BooleanValue (false));
}

void
TcpLeanFlowTransport::SetDctcpDefaults ()
{
    Config::SetDefault ("ns3::TcpLeanFlowTransport::Dctcp", BooleanValue (true));
}

void
TcpLeanFlowTransport::DoDispose ()
{
    m_active.clear ();
    m_hosts.clear ();
    m_topology = nullptr;
    FlowTransport::DoDispose ();
}

void
TcpLeanFlowTransport::ConfigureFabric (Ptr<ClosTopology> topology)
{
    m_topology = topology;
    m_senderConfig.mssBytes = m_mssBytes;
    m_senderConfig.initialCwndSegments = m_initialCwnd;
    m_senderConfig.dupThresh = m_dupThresh;
    m_senderConfig.minRto = m_minRto;
    m_senderConfig.initialRto = m_initialRto;
    m_senderConfig.clockGranularity = m_clockGranularity;
    m_senderConfig.growth = m_dctcp ? TcpLeanGrowth::LINUX_RENO : TcpLeanGrowth::NEW_RENO;
    m_senderConfig.dctcp = m_dctcp;
    m_senderConfig.prr = m_prr;
    m_senderConfig.ns3DctcpEce = m_ns3DctcpEce;
    m_senderConfig.ns3PipeSsthresh = m_ns3PipeSsthresh;
    m_senderConfig.ns3Disorder = m_ns3Disorder;
    m_senderConfig.dctcpG = m_dctcpG;
    m_senderConfig.dctcpAlphaInit = m_dctcpAlphaInit;
    m_receiverConfig.mssBytes = m_mssBytes;
    m_receiverConfig.delAckCount = m_delAckCount;
    m_receiverConfig.delAckTimeout = m_delAckTimeout;
    m_receiverConfig.dctcp = m_dctcp;

    m_markThresholdBytes = 0;
    if (m_dctcp)
    {
        m_markThresholdBytes =
            m_markThresholdAttr != 0
                ? m_markThresholdAttr
                : TcpFlowTransport::DctcpMarkThresholdBytes (topology, m_mssBytes);
    }
    // The ports of tcp-ns3: drop-tail, CE above K for DCTCP; host NICs mark only when they
    // have a limit.
    TcpFlowTransport::SetTcpPorts (topology, m_markThresholdBytes, m_hostBufferBytes,
                                   "ns3::TcpLeanFlowTransport::HostBufferBytes");
}

void
TcpLeanFlowTransport::Install (Ptr<ClosTopology> topology)
{
    m_topology = topology;
    m_hosts.clear ();
    for (uint32_t i = 0; i < topology->GetNHosts (); ++i)
    {
        Ptr<TcpLeanHost> host = CreateObject<TcpLeanHost> ();
        host->Setup (topology->GetHostDevice (i), static_cast<uint16_t> (i));
        m_hosts.push_back (host);
    }
    m_connectionsOpened.assign (topology->GetNHosts (), 0);
    m_starts.SetStartCallback ([this] (uint64_t index) { StartFlow (m_flows[index]); });
    SetFlowTopology (topology);
}

void
TcpLeanFlowTransport::DoAddFlow (const FlowSpec& flow)
{
    // ns-3's Ipv4EndPointDemux::AllocateEphemeralPort hands a host's connections 49153,
    // 49154, ... in the order they open, wrapping to 49152 after 65535; tcp-ns3 opens a
    // host's connections in its flows' order (doc §1).
    const uint32_t k = m_connectionsOpened[flow.srcHost]++;
    const auto port = static_cast<uint16_t> (kEphemeralFirst + (k + 1) % kEphemeralCount);
    m_starts.Add (m_flows.size (), flow.startNs);
    m_flows.push_back (Flow{flow, port});
    m_starts.ScheduleNow ();
}

void
TcpLeanFlowTransport::StartFlow (const Flow& flow)
{
    const FlowSpec& spec = flow.spec;
    const uint32_t srcIp = FabricHostIpv4Address (spec.srcHost).Get ();
    const uint32_t dstIp = FabricHostIpv4Address (spec.dstHost).Get ();
    uint32_t dataHash;
    uint32_t ackHash;
    if (m_ns3Ports)
    {
        dataHash = FabricFlowHash (srcIp, dstIp, kTcpIpProtocol, flow.srcPort, kNs3ListenPort);
        ackHash = FabricFlowHash (dstIp, srcIp, kTcpIpProtocol, kNs3ListenPort, flow.srcPort);
    }
    else
    {
        dataHash = FabricFlowHash (srcIp, dstIp, kTcpIpProtocol,
                                   static_cast<uint16_t> (spec.flowId),
                                   static_cast<uint16_t> (spec.flowId >> 16));
        ackHash = dataHash;
    }
    TcpLeanHost* src = PeekPointer (m_hosts[spec.srcHost]);
    TcpLeanHost* dst = PeekPointer (m_hosts[spec.dstHost]);
    Ptr<TcpLeanReceiver> receiver = Create<TcpLeanReceiver> (
        m_receiverConfig, dst, spec.flowId, static_cast<uint16_t> (spec.srcHost), spec.sizeBytes,
        ackHash, [this] (uint64_t flowId, Time) { NotifyFlowFinished (flowId); });
    dst->AddReceiver (spec.flowId, receiver);
    Ptr<TcpLeanSender> sender = Create<TcpLeanSender> (
        m_senderConfig, src, spec.flowId, static_cast<uint16_t> (spec.dstHost), spec.sizeBytes,
        dataHash, [this] (uint64_t flowId, Time at) { OnAcked (flowId, at); });
    src->AddSender (spec.flowId, sender);
    m_active[spec.flowId] = Active{sender, spec.srcHost, spec.dstHost};
    sender->Start (Simulator::Now ());
}

void
TcpLeanFlowTransport::OnAcked (uint64_t flowId, Time acked)
{
    // Not from inside the sender's own call stack: the host holds a reference to it.
    Simulator::ScheduleNow (&TcpLeanFlowTransport::Release, this, flowId);
}

void
TcpLeanFlowTransport::Count (const TcpLeanSender& sender)
{
    m_timeouts += sender.GetTimeouts ();
    m_fastRetransmits += sender.GetFastRetransmits ();
    m_ecnCuts += sender.GetEcnCuts ();
    m_dataPacketsSent += sender.GetDataPacketsSent ();
}

void
TcpLeanFlowTransport::Release (uint64_t flowId)
{
    auto it = m_active.find (flowId);
    if (it == m_active.end ())
    {
        return;
    }
    Count (*it->second.sender);
    m_hosts[it->second.srcHost]->RemoveSender (flowId);
    m_hosts[it->second.dstHost]->RemoveReceiver (flowId);
    m_active.erase (it);
}

Ptr<TcpLeanSender>
TcpLeanFlowTransport::GetSender (uint64_t flowId) const
{
    auto it = m_active.find (flowId);
    return it == m_active.end () ? nullptr : it->second.sender;
}

std::vector<std::pair<std::string, std::string>>
TcpLeanFlowTransport::GetStatistics () const
{
    uint64_t timeouts = m_timeouts;
    uint64_t fastRetransmits = m_fastRetransmits;
    uint64_t ecnCuts = m_ecnCuts;
    uint64_t dataPacketsSent = m_dataPacketsSent;
    for (const auto& [flowId, active] : m_active)
    {
        timeouts += active.sender->GetTimeouts ();
        fastRetransmits += active.sender->GetFastRetransmits ();
        ecnCuts += active.sender->GetEcnCuts ();
        dataPacketsSent += active.sender->GetDataPacketsSent ();
    }
    uint64_t nicDrops = 0;
    for (const Ptr<TcpLeanHost>& host : m_hosts)
    {
        nicDrops += host->GetNicDrops ();
    }
    return {
        {"tcp.timeouts", std::to_string (timeouts)},
        {"tcp.fast_retransmits", std::to_string (fastRetransmits)},
        {"tcp.ecn_cuts", std::to_string (ecnCuts)},
        {"tcp.data_packets_sent", std::to_string (dataPacketsSent)},
        {"tcp.host_nic_drops", std::to_string (nicDrops)},
        {"tcp.flows_unacked", std::to_string (m_active.size ())},
    };
}

uint32_t
TcpLeanFlowTransport::GetPerPacketHeaderBytes () const
{
    return kTcpLeanHeaderBytes;
}

uint32_t
TcpLeanFlowTransport::GetMssBytes () const
{
    return m_mssBytes;
}

std::vector<TypeId>
TcpLeanFlowTransport::GetConfigTypeIds () const
{
    return {GetInstanceTypeId (), DropTailEcnQueue::GetTypeId ()};
}

std::vector<std::pair<std::string, std::string>>
TcpLeanFlowTransport::GetDerivedConfig () const
{
    return {{"switch_mark_threshold_bytes", std::to_string (m_markThresholdBytes)},
            {"mss_bytes", std::to_string (m_mssBytes)},
            {"per_packet_header_bytes", std::to_string (kTcpLeanHeaderBytes)}};
}

} // namespace ns3
