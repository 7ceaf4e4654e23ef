/*
 * disaggsim: pHost as a FlowTransport over the Clos fabric (protocol name "phost").
 */
#include "phost-helper.h"

#include "transports/phost/model/phost-header.h"
#include "topologies/model/strict-priority-queue.h"

#include "ns3/abort.h"
#include "ns3/boolean.h"
#include "ns3/log.h"
#include "ns3/simulator.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <cmath>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE ("PhostFlowTransport");
NS_OBJECT_ENSURE_REGISTERED (PhostFlowTransport);

namespace
{
const FlowTransportRegistrar g_phostRegistrar ({
    "phost",
    "pHost (Gao et al. CoNEXT'15): receiver-driven tokens paced at line rate, SRPT at both "
    "ends, BDP of free tokens, downgrade, two switch priorities "
    "(transports/phost/doc/phost.md)",
    [] {},
    [] { return Ptr<FlowTransport> (CreateObject<PhostFlowTransport> ()); },
    "ns3::PhostFlowTransport::MssBytes",
});
} // namespace

TypeId
PhostFlowTransport::GetTypeId ()
{
    static TypeId tid =
        TypeId ("ns3::PhostFlowTransport")
            .SetParent<FlowTransport> ()
            .SetGroupName ("Disaggsim")
            .AddConstructor<PhostFlowTransport> ()
            .AddAttribute ("MssBytes", "Payload bytes of a full data packet (1460: 1500 B frames)",
                           UintegerValue (1460),
                           MakeUintegerAccessor (&PhostFlowTransport::m_mssBytes),
                           MakeUintegerChecker<uint32_t> (1, 9000))
            .AddAttribute ("FreeTokens",
                           "Packets a flow may send before any token (pHost §3.1: one BDP); "
                           "0 = derived: ceil(BaseRtt / T), T = wire time of a full packet",
                           UintegerValue (0),
                           MakeUintegerAccessor (&PhostFlowTransport::m_freeTokens),
                           MakeUintegerChecker<uint32_t> ())
            .AddAttribute ("TokenExpiry",
                           "A token unused for this long lapses (pHost §3.1); 0 = derived: "
                           "1.5 T (NetSys/simulator capability_timeout 1.5 packet times)",
                           TimeValue (Time (0)),
                           MakeTimeAccessor (&PhostFlowTransport::m_tokenExpiry),
                           MakeTimeChecker (Time (0)))
            .AddAttribute ("DowngradeTokens",
                           "Consecutive tokens with no data of the flow in between that "
                           "downgrade it (pHost §3.2); 0 = derived: InFlightWindow (inter-rack "
                           "free tokens + 2: more than a round trip of tokens)",
                           UintegerValue (0),
                           MakeUintegerAccessor (&PhostFlowTransport::m_downgradeTokens),
                           MakeUintegerChecker<uint32_t> ())
            .AddAttribute ("DowngradeTime",
                           "How long a downgraded flow gets no token (pHost §3.2); 0 = "
                           "derived: 3 BaseRtt (our choice, doc §4)",
                           TimeValue (Time (0)),
                           MakeTimeAccessor (&PhostFlowTransport::m_downgradeTime),
                           MakeTimeChecker (Time (0)))
            .AddAttribute ("RetransmissionTimeout",
                           "A granted packet not arrived this long after its token (or the "
                           "flow's RTS, for free packets) gets its token again (pHost §3.2); "
                           "also the first RTS retry interval (doubling after each retry); "
                           "0 = derived: 3 BaseRtt (doc §4)",
                           TimeValue (Time (0)),
                           MakeTimeAccessor (&PhostFlowTransport::m_retransmissionTimeout),
                           MakeTimeChecker (Time (0)))
            .AddAttribute ("InFlightWindow",
                           "A destination skips its token slot while this many packets it "
                           "granted (free ones included) in the last 3 BaseRtt have not "
                           "arrived (doc §3: drains the queue free packets build); 0 = "
                           "derived: inter-rack free tokens + 2",
                           UintegerValue (0),
                           MakeUintegerAccessor (&PhostFlowTransport::m_inFlightWindow),
                           MakeUintegerChecker<uint32_t> ())
            .AddAttribute ("GrantAfterFirstData",
                           "A flow with free packets that its destination learns from a lone "
                           "RTS (its source is busy with a more urgent flow) gets no token "
                           "before its first data packet arrives, or RetransmissionTimeout if "
                           "none does; false = tokens from the RTS on, the paper's letter "
                           "(doc §3)",
                           BooleanValue (true),
                           MakeBooleanAccessor (&PhostFlowTransport::m_grantAfterFirstData),
                           MakeBooleanChecker ())
            .AddAttribute ("PriorityLevels",
                           "Switch priority levels (pHost §3.3): 2 = control packets (RTS, "
                           "token, ACK) above data; 3 also puts free-token data above "
                           "token data",
                           UintegerValue (2),
                           MakeUintegerAccessor (&PhostFlowTransport::m_priorityLevels),
                           MakeUintegerChecker<uint32_t> (2, 3));
    return tid;
}

PhostFlowTransport::PhostFlowTransport () = default;

PhostFlowTransport::~PhostFlowTransport () = default;

void
PhostFlowTransport::DoDispose ()
{
    for (Ptr<PhostHost>& host : m_hosts)
    {
        host->Dispose ();
    }
    m_hosts.clear ();
    m_topology = nullptr;
    FlowTransport::DoDispose ();
}

void
PhostFlowTransport::ConfigureFabric (Ptr<ClosTopology> topology)
{
    m_topology = topology;
    ObjectFactory queue;
    queue.SetTypeId (StrictPriorityQueue::GetTypeId ());
    queue.Set ("Classes", UintegerValue (m_priorityLevels));
    topology->SetSwitchQueue (queue);
    topology->SetHostQueue (queue);

    const uint64_t bps = topology->GetAccessRate ().GetBitRate ();
    const Time packetTime =
        FabricNetDevice::TxTimeFor (m_mssBytes + kPhostHeaderBytes + kFabricHeaderBytes, bps);
    m_baseRtt = topology->BaseRtt (kPhostHeaderBytes, m_mssBytes);
    // One BDP of each path: a full packet there and a token back, in packet times.
    const auto bdpPackets = [&packetTime] (Time rtt)
    {
        return static_cast<uint32_t> (
            std::ceil (static_cast<double> (rtt.GetPicoSeconds ()) /
                       static_cast<double> (packetTime.GetPicoSeconds ())));
    };
    const uint32_t intraDst = 1;
    const Time intraRtt =
        topology->IdealFct (0, intraDst, m_mssBytes, kPhostHeaderBytes, m_mssBytes) +
        topology->IdealFct (intraDst, 0, 0, kPhostHeaderBytes, m_mssBytes);
    const uint32_t interPackets = bdpPackets (m_baseRtt);
    m_params.mssBytes = m_mssBytes;
    m_params.accessBitRate = bps;
    m_params.packetTime = packetTime;
    m_params.hostsPerRack = topology->GetHostsPerRack ();
    m_params.freeTokensInterRack = m_freeTokens != 0 ? m_freeTokens : interPackets;
    m_params.freeTokensIntraRack = m_freeTokens != 0 ? m_freeTokens : bdpPackets (intraRtt);
    m_params.tokenExpiry = !m_tokenExpiry.IsZero ()
                               ? m_tokenExpiry
                               : PicoSeconds (packetTime.GetPicoSeconds () * 3 / 2);
    m_params.downgradeTokens = m_downgradeTokens != 0 ? m_downgradeTokens : interPackets + 2;
    m_params.downgradeTime = !m_downgradeTime.IsZero () ? m_downgradeTime : 3 * m_baseRtt;
    m_params.retransmissionTimeout =
        !m_retransmissionTimeout.IsZero () ? m_retransmissionTimeout : 3 * m_baseRtt;
    m_params.inFlightWindow = m_inFlightWindow != 0 ? m_inFlightWindow : interPackets + 2;
    m_params.inFlightHorizon = 3 * m_baseRtt;
    m_params.answerTime = 2 * m_baseRtt;
    m_params.grantAfterFirstData = m_grantAfterFirstData;
    m_params.priorityLevels = m_priorityLevels;
    m_params.controlLevel = 0;
    m_params.freeDataLevel = 1;
    m_params.tokenDataLevel = m_priorityLevels >= 3 ? 2 : 1;
    NS_LOG_INFO ("pHost: rtt " << m_baseRtt << " T " << packetTime << " free "
                               << m_params.freeTokensInterRack << " rto "
                               << m_params.retransmissionTimeout);
}

void
PhostFlowTransport::Install (Ptr<ClosTopology> topology)
{
    m_topology = topology;
    m_hosts.clear ();
    for (uint32_t i = 0; i < topology->GetNHosts (); ++i)
    {
        Ptr<PhostHost> host = CreateObject<PhostHost> ();
        host->Setup (topology->GetHostDevice (i), static_cast<uint16_t> (i), m_params,
                     MakeCallback (&PhostFlowTransport::OnFinished, this));
        m_hosts.push_back (host);
    }
    m_starts.SetStartCallback ([this] (uint64_t index) { StartFlow (m_flows[index]); });
    SetFlowTopology (topology);
}

void
PhostFlowTransport::DoAddFlow (const FlowSpec& flow)
{
    m_starts.Add (m_flows.size (), flow.startNs);
    m_flows.push_back (flow);
    m_starts.ScheduleNow ();
}

void
PhostFlowTransport::StartFlow (const FlowSpec& flow)
{
    m_hosts[flow.srcHost]->GetSource ().StartFlow (
        flow.flowId, static_cast<uint16_t> (flow.dstHost), flow.sizeBytes);
}

void
PhostFlowTransport::OnFinished (uint64_t flowId)
{
    NotifyFlowFinished (flowId);
}

uint32_t
PhostFlowTransport::GetPerPacketHeaderBytes () const
{
    return kPhostHeaderBytes;
}

uint32_t
PhostFlowTransport::GetMssBytes () const
{
    return m_mssBytes;
}

std::vector<TypeId>
PhostFlowTransport::GetConfigTypeIds () const
{
    return {GetInstanceTypeId (), StrictPriorityQueue::GetTypeId ()};
}

std::vector<std::pair<std::string, std::string>>
PhostFlowTransport::GetDerivedConfig () const
{
    return {
        {"phost.base_rtt_ns", std::to_string (m_baseRtt.GetNanoSeconds ())},
        {"phost.packet_time_ps", std::to_string (m_params.packetTime.GetPicoSeconds ())},
        {"phost.free_tokens_intra_rack_pkts", std::to_string (m_params.freeTokensIntraRack)},
        {"phost.free_tokens_inter_rack_pkts", std::to_string (m_params.freeTokensInterRack)},
        {"phost.token_expiry_ps", std::to_string (m_params.tokenExpiry.GetPicoSeconds ())},
        {"phost.downgrade_tokens", std::to_string (m_params.downgradeTokens)},
        {"phost.in_flight_window_pkts", std::to_string (m_params.inFlightWindow)},
        {"phost.grant_after_first_data", m_params.grantAfterFirstData ? "1" : "0"},
        {"phost.downgrade_time_ns", std::to_string (m_params.downgradeTime.GetNanoSeconds ())},
        {"phost.retransmission_timeout_ns",
         std::to_string (m_params.retransmissionTimeout.GetNanoSeconds ())},
    };
}

std::vector<std::pair<std::string, std::string>>
PhostFlowTransport::GetStatistics () const
{
    uint64_t tokensSent = 0, reissued = 0, expired = 0, downgrades = 0, rts = 0, data = 0,
             duplicates = 0, skipped = 0;
    for (const Ptr<PhostHost>& host : m_hosts)
    {
        PhostDestination& dst = host->GetDestination ();
        PhostSource& src = host->GetSource ();
        tokensSent += dst.GetTokensSent ();
        reissued += dst.GetTokensReissued ();
        downgrades += dst.GetDowngrades ();
        duplicates += dst.GetDuplicates ();
        skipped += dst.GetSlotsSkipped ();
        expired += src.GetTokensExpired ();
        rts += src.GetRtsResent ();
        data += src.GetDataPacketsSent ();
    }
    return {
        {"phost.tokens_sent", std::to_string (tokensSent)},
        {"phost.tokens_reissued", std::to_string (reissued)},
        {"phost.tokens_expired", std::to_string (expired)},
        {"phost.downgrades", std::to_string (downgrades)},
        {"phost.rts_resent", std::to_string (rts)},
        {"phost.data_packets_sent", std::to_string (data)},
        {"phost.duplicate_data_packets", std::to_string (duplicates)},
        {"phost.token_slots_skipped", std::to_string (skipped)},
    };
}

} // namespace ns3
