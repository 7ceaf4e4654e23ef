/*
 * disaggsim: per-rack CXL memory pool + inter-rack daemons (topologies/doc/cxl.md).
 */
#include "cxl-rack-tier.h"

#include "ns3/abort.h"
#include "ns3/boolean.h"
#include "ns3/log.h"
#include "ns3/simulator.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE ("CxlRackTier");
NS_OBJECT_ENSURE_REGISTERED (CxlRackTier);

TypeId
CxlRackTier::GetTypeId ()
{
    static TypeId tid =
        TypeId ("ns3::CxlRackTier")
            .SetParent<FlowTransport> ()
            .SetGroupName ("Disaggsim")
            .AddConstructor<CxlRackTier> ()
            .AddAttribute ("Enabled",
                           "Whether the driver puts the tier around its transport "
                           "(disaggsim-ns3 --cxlTier sets it; a campaign's [attributes] can)",
                           BooleanValue (false), MakeBooleanAccessor (&CxlRackTier::m_enabled),
                           MakeBooleanChecker ())
            .AddAttribute ("LoadStoreLatency",
                           "Latency of one load/store access to the rack's CXL pool.  Default "
                           "140 ns: Rcmp's NUMA emulation of CXL memory measured 138.5 and "
                           "141.1 ns (Rcmp §6.2); CXL is 90-150 ns (§2.3, Table 2)",
                           TimeValue (NanoSeconds (140)),
                           MakeTimeAccessor (&CxlRackTier::m_latency), MakeTimeChecker ())
            .AddAttribute ("LinkRate",
                           "Bandwidth of each host's CXL link to the pool.  Default 256 Gbps: "
                           "PCIe 5.0 (Rcmp §2.3), 32 GT/s per lane, x8 (the width is an "
                           "assumption; the paper gives none)",
                           DataRateValue (DataRate ("256Gbps")),
                           MakeDataRateAccessor (&CxlRackTier::m_linkRate),
                           MakeDataRateChecker ())
            .AddAttribute ("DaemonDelay",
                           "Processing time of a rack's daemon per inter-rack access, at each "
                           "end (Rcmp gives none: 0)",
                           TimeValue (Time (0)), MakeTimeAccessor (&CxlRackTier::m_daemonDelay),
                           MakeTimeChecker (Time (0)))
            .AddAttribute ("DaemonHostIndex",
                           "Index within its rack of the host that runs the rack's daemon "
                           "(Rcmp §5.1: a server of the rack, like the compute nodes)",
                           UintegerValue (0), MakeUintegerAccessor (&CxlRackTier::m_daemonIndex),
                           MakeUintegerChecker<uint32_t> ());
    return tid;
}

CxlRackTier::CxlRackTier () = default;

CxlRackTier::~CxlRackTier () = default;

void
CxlRackTier::SetInnerTransport (Ptr<FlowTransport> inner)
{
    NS_ABORT_MSG_IF (m_topology, "CxlRackTier: SetInnerTransport after ConfigureFabric");
    m_inner = inner;
}

void
CxlRackTier::ConfigureFabric (Ptr<ClosTopology> topology)
{
    NS_ABORT_MSG_IF (!m_inner, "CxlRackTier: no inner transport (SetInnerTransport)");
    m_topology = topology;
    m_inner->ConfigureFabric (topology);
}

void
CxlRackTier::Install (Ptr<ClosTopology> topology)
{
    if (m_daemonIndex >= topology->GetHostsPerRack ())
    {
        throw std::invalid_argument ("ns3::CxlRackTier::DaemonHostIndex: expected < "
                                     "HostsPerRack (" +
                                     std::to_string (topology->GetHostsPerRack ()) + "), got " +
                                     std::to_string (m_daemonIndex));
    }
    if (m_linkRate.GetBitRate () == 0)
    {
        throw std::invalid_argument ("ns3::CxlRackTier::LinkRate: expected > 0");
    }
    m_topology = topology;
    m_inner->Install (topology);
    m_inner->TraceConnectWithoutContext ("FlowFinished",
                                         MakeCallback (&CxlRackTier::OnInnerFinished, this));
    SetFlowTopology (topology);
}

uint32_t
CxlRackTier::GetPerPacketHeaderBytes () const
{
    return m_inner->GetPerPacketHeaderBytes ();
}

uint32_t
CxlRackTier::GetMssBytes () const
{
    return m_inner->GetMssBytes ();
}

Time
CxlRackTier::GetTraceOrigin () const
{
    return m_inner->GetTraceOrigin ();
}

std::vector<TypeId>
CxlRackTier::GetConfigTypeIds () const
{
    std::vector<TypeId> types = {GetInstanceTypeId ()};
    for (const TypeId& tid : m_inner->GetConfigTypeIds ())
    {
        types.push_back (tid);
    }
    return types;
}

std::vector<std::pair<std::string, std::string>>
CxlRackTier::GetDerivedConfig () const
{
    return m_inner->GetDerivedConfig ();
}

std::vector<std::pair<std::string, std::string>>
CxlRackTier::GetStatistics () const
{
    auto stats = m_inner->GetStatistics ();
    stats.emplace_back ("cxl_accesses", std::to_string (m_cxlAccesses));
    stats.emplace_back ("cxl_bytes", std::to_string (m_cxlBytes));
    stats.emplace_back ("inter_rack_accesses", std::to_string (m_interRackAccesses));
    stats.emplace_back ("inter_rack_bytes", std::to_string (m_interRackBytes));
    return stats;
}

Time
CxlRackTier::CxlTransferTime (uint64_t sizeBytes) const
{
    // ceil(8 b / rate) in ps, as FabricNetDevice serializes a frame.
    const uint64_t bps = m_linkRate.GetBitRate ();
    const uint64_t bits = sizeBytes * 8;
    const uint64_t ps = (bits * 1000000000000ULL + bps - 1) / bps;
    return PicoSeconds (ps);
}

Time
CxlRackTier::CxlAccessTime (uint64_t sizeBytes) const
{
    return m_latency + CxlTransferTime (sizeBytes);
}

uint32_t
CxlRackTier::GetDaemonHost (uint32_t rack) const
{
    return rack * m_topology->GetHostsPerRack () + m_daemonIndex;
}

int64_t
CxlRackTier::IngressNs (uint64_t sizeBytes) const
{
    const int64_t ps = (CxlAccessTime (sizeBytes) + m_daemonDelay).GetPicoSeconds ();
    return (ps + 999) / 1000;
}

Time
CxlRackTier::LoneAccessTime (const FlowSpec& flow) const
{
    const uint32_t srcRack = m_topology->GetRackOfHost (flow.srcHost);
    const uint32_t dstRack = m_topology->GetRackOfHost (flow.dstHost);
    if (srcRack == dstRack)
    {
        return CxlAccessTime (flow.sizeBytes);
    }
    FlowSpec inner = flow;
    inner.srcHost = GetDaemonHost (srcRack);
    inner.dstHost = GetDaemonHost (dstRack);
    inner.startNs = flow.startNs + IngressNs (flow.sizeBytes);
    const Time fabric =
        m_topology->IdealFct (inner.srcHost, inner.dstHost, flow.sizeBytes,
                              m_inner->GetPerPacketHeaderBytes (), m_inner->GetMssBytes ()) +
        m_inner->GetLoneFlowExtraDelay (inner);
    return NanoSeconds (IngressNs (flow.sizeBytes)) + fabric + m_daemonDelay +
           CxlAccessTime (flow.sizeBytes);
}

Time
CxlRackTier::GetLoneFlowExtraDelay (const FlowSpec& flow) const
{
    return LoneAccessTime (flow) -
           m_topology->IdealFct (flow.srcHost, flow.dstHost, flow.sizeBytes,
                                 GetPerPacketHeaderBytes (), GetMssBytes ());
}

void
CxlRackTier::DoAddFlow (const FlowSpec& flow)
{
    const uint32_t srcRack = m_topology->GetRackOfHost (flow.srcHost);
    const uint32_t dstRack = m_topology->GetRackOfHost (flow.dstHost);
    if (srcRack == dstRack)
    {
        m_intraRack.push_back (flow);
        m_cxlAccesses++;
        m_cxlBytes += flow.sizeBytes;
        if (!m_serveScheduled)
        {
            // At the start of the run, when every flow and the trace origin are known.
            m_serveScheduled = true;
            Simulator::ScheduleNow (&CxlRackTier::ServeIntraRack, this);
        }
        return;
    }
    FlowSpec inner = flow;
    inner.srcHost = GetDaemonHost (srcRack);
    inner.dstHost = GetDaemonHost (dstRack);
    inner.startNs = flow.startNs + IngressNs (flow.sizeBytes);
    m_interRackSize[flow.flowId] = flow.sizeBytes;
    m_interRackAccesses++;
    m_interRackBytes += flow.sizeBytes;
    m_inner->AddFlow (inner);
}

void
CxlRackTier::ServeIntraRack ()
{
    // Each host's link serves its accesses in start order (flow id breaks ties): the
    // transfer starts when the link is free, the load/store latency follows it.
    std::stable_sort (m_intraRack.begin (), m_intraRack.end (),
                      [] (const FlowSpec& a, const FlowSpec& b) {
                          return a.startNs != b.startNs ? a.startNs < b.startNs
                                                        : a.flowId < b.flowId;
                      });
    const Time origin = GetTraceOrigin ();
    std::map<uint32_t, Time> linkFree;
    for (const FlowSpec& flow : m_intraRack)
    {
        // The client is the end that is not the pool's daemon host; a row between two
        // compute nodes of a rack uses the source's link.
        const uint32_t client =
            flow.srcHost % m_topology->GetHostsPerRack () == m_daemonIndex ? flow.dstHost
                                                                           : flow.srcHost;
        const Time start = origin + NanoSeconds (flow.startNs);
        Time& free = linkFree[client];
        const Time begin = std::max (start, free);
        free = begin + CxlTransferTime (flow.sizeBytes);
        Simulator::Schedule (free + m_latency - Simulator::Now (),
                             &CxlRackTier::NotifyFlowFinished, this, flow.flowId);
    }
    m_intraRack.clear ();
    m_intraRack.shrink_to_fit ();
}

void
CxlRackTier::OnInnerFinished (uint64_t flowId, Time finish)
{
    auto it = m_interRackSize.find (flowId);
    NS_ABORT_MSG_IF (it == m_interRackSize.end (), "CxlRackTier: unknown inner flow " << flowId);
    const Time store = m_daemonDelay + CxlAccessTime (it->second);
    m_interRackSize.erase (it);
    Simulator::Schedule (finish + store - Simulator::Now (), &CxlRackTier::NotifyFlowFinished,
                         this, flowId);
}

void
CxlRackTier::DoDispose ()
{
    m_inner = nullptr;
    m_topology = nullptr;
    FlowTransport::DoDispose ();
}

} // namespace ns3
