/*
 * disaggsim: Fastpass as a FlowTransport over the Clos fabric (protocol name "fastpass").
 */
#include "fastpass-helper.h"

#include "topologies/model/fabric-header.h"
#include "transports/fastpass/model/fastpass-header.h"

#include "ns3/abort.h"
#include "ns3/boolean.h"
#include "ns3/double.h"
#include "ns3/enum.h"
#include "ns3/log.h"
#include "ns3/simulator.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <cmath>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE ("FastpassFlowTransport");
NS_OBJECT_ENSURE_REGISTERED (FastpassFlowTransport);

namespace
{
const FlowTransportRegistrar g_fastpassRegistrar ({
    "fastpass",
    "Fastpass (Perry et al. SIGCOMM'14): a centralized arbiter node allocates every packet a "
    "timeslot and a spine (transports/fastpass/doc/fastpass.md)",
    [] {},
    [] { return Ptr<FlowTransport> (CreateObject<FastpassFlowTransport> ()); },
    "ns3::FastpassFlowTransport::MssBytes",
});

/// Wire bytes of a control frame without entries (REQUEST, DONE, PROBE).
constexpr uint32_t kControlWireBytes = kFastpassHeaderBytes + kFabricHeaderBytes;
/// Wire bytes of the longest control frame a host sends (MISSING listing 64 packets; an AREQ
/// of 10 destinations is 140 B).
constexpr uint32_t kMaxControlWireBytes =
    std::max (kControlWireBytes + kFastpassMaxMissingPerReply * kFastpassMissingEntryBytes,
              kControlWireBytes + kFastpassMaxAreqPerFrame * kFastpassAreqEntryBytes);
} // namespace

TypeId
FastpassFlowTransport::GetTypeId ()
{
    static TypeId tid =
        TypeId ("ns3::FastpassFlowTransport")
            .SetParent<FlowTransport> ()
            .SetGroupName ("Disaggsim")
            .AddConstructor<FastpassFlowTransport> ()
            .AddAttribute ("MssBytes",
                           "Payload of a full data packet (1460 B: 1500 B frames with the 40 B "
                           "header of the authors' simulator, NetSys/simulator run/params.cpp)",
                           UintegerValue (1460),
                           MakeUintegerAccessor (&FastpassFlowTransport::m_mssBytes),
                           MakeUintegerChecker<uint32_t> (1))
            .AddAttribute ("Timeslot",
                           "Timeslot length; 0 = one full data frame (MssBytes + 40 B) plus "
                           "GuardBytes at the access rate (Fastpass §3: a timeslot is the time "
                           "to transmit one MTU-sized packet)",
                           TimeValue (Time (0)),
                           MakeTimeAccessor (&FastpassFlowTransport::m_timeslotAttr),
                           MakeTimeChecker ())
            .AddAttribute ("GuardBytes",
                           "Gap after each timeslot's packet in which hosts send control "
                           "frames (94 B ~ 1500 / 16: the half packet per 8-packet epoch of "
                           "NetSys/simulator run/params.cpp, fastpass_epoch_time = 1500 x 8 x "
                           "(8 + 0.5) / bandwidth); 0 = timeslots of exactly one frame",
                           UintegerValue (94),
                           MakeUintegerAccessor (&FastpassFlowTransport::m_guardBytes),
                           MakeUintegerChecker<uint32_t> ())
            .AddAttribute ("BatchSlots",
                           "Timeslots the arbiter allocates per pass (8: the epochs of "
                           "FASTPASS_EPOCH_PKTS packets of NetSys/simulator run/params.h; "
                           "Fastpass §3.2 pipelines timeslots)",
                           UintegerValue (8),
                           MakeUintegerAccessor (&FastpassFlowTransport::m_batchSlots),
                           MakeUintegerChecker<uint32_t> (1, 256))
            .AddAttribute ("ProcessingLatency",
                           "Time from a pass to the transmission of its ALLOC frames (the "
                           "arbiter's computation; 0 as in NetSys/simulator, which sends the "
                           "schedule in the same event as it computes it)",
                           TimeValue (Time (0)),
                           MakeTimeAccessor (&FastpassFlowTransport::m_processingLatency),
                           MakeTimeChecker (Time (0)))
            .AddAttribute ("AllocationLead",
                           "Time from a pass to the first timeslot it allocates, rounded up to "
                           "whole timeslots; 0 = derived so that every ALLOC arrives before "
                           "its timeslot (doc §3)",
                           TimeValue (Time (0)),
                           MakeTimeAccessor (&FastpassFlowTransport::m_leadAttr),
                           MakeTimeChecker (Time (0)))
            .AddAttribute ("RetransmitTimeout",
                           "Silence after which a sender probes its receiver for lost packets; "
                           "0 = lead + batch + 3 x base RTT (doc §5)",
                           TimeValue (Time (0)),
                           MakeTimeAccessor (&FastpassFlowTransport::m_rtoAttr),
                           MakeTimeChecker (Time (0)))
            .AddAttribute ("ArbiterRack",
                           "Rack whose ToR the arbiter is attached to (0: NetSys/simulator "
                           "ext/fastpassTopology.cpp hangs it off aggregation switch 0)",
                           UintegerValue (0),
                           MakeUintegerAccessor (&FastpassFlowTransport::m_arbiterRack),
                           MakeUintegerChecker<uint32_t> ())
            .AddAttribute ("ArbiterRate",
                           "Rate of the arbiter's link to its ToR; 0 = the access rate "
                           "(NetSys/simulator: the arbiter's queue runs at the host rate c1)",
                           DataRateValue (DataRate (0)),
                           MakeDataRateAccessor (&FastpassFlowTransport::m_arbiterRateAttr),
                           MakeDataRateChecker ())
            .AddAttribute ("ArbiterCableM",
                           "Length of the arbiter's cable in m (4 m, a host cable, Gao et al. "
                           "OSDI'16 §3.3)",
                           DoubleValue (4),
                           MakeDoubleAccessor (&FastpassFlowTransport::m_arbiterCableM),
                           MakeDoubleChecker<double> (0))
            .AddAttribute ("Order",
                           "Order of demands in the greedy matching: FewestRemaining "
                           "(min-FCT, NetSys/simulator FastpassFlowComparator) or "
                           "LeastRecentlyAllocated (Fastpass §3.1 fairness)",
                           EnumValue (FastpassOrder::FEWEST_REMAINING),
                           MakeEnumAccessor (&FastpassFlowTransport::m_order),
                           MakeEnumChecker (FastpassOrder::FEWEST_REMAINING, "FewestRemaining",
                                            FastpassOrder::LEAST_RECENTLY_ALLOCATED,
                                            "LeastRecentlyAllocated"))
            .AddAttribute ("PerDestinationRequests",
                           "true: FCP (Fastpass §5), a host sends one AREQ per send opportunity "
                           "listing the cumulative demand of each destination (at most 10, "
                           "FASTPASS_PKT_MAX_AREQ of yonch/fastpass src/protocol/fpproto.h) "
                           "and the arbiter keeps demand per (src, dst); false: one REQUEST "
                           "per flow and demand per flow, as NetSys/simulator's FastpassRTS",
                           BooleanValue (true),
                           MakeBooleanAccessor (&FastpassFlowTransport::m_perDestination),
                           MakeBooleanChecker ())
            .AddAttribute ("RequestGap",
                           "FCP: least time between two AREQs of one host, which carry all "
                           "demand that arose meanwhile; 0 = one timeslot (one control send "
                           "opportunity per timeslot, the guard gap; the authors' endpoint "
                           "paces requests too, yonch/fastpass sch_fastpass.c req_min_gap)",
                           TimeValue (Time (0)),
                           MakeTimeAccessor (&FastpassFlowTransport::m_requestGapAttr),
                           MakeTimeChecker (Time (0)))
            .AddAttribute ("SendOnArrival",
                           "Experiment knob: a host sends the packet of ALLOC entry i at the "
                           "ALLOC's arrival + i timeslots (NetSys/simulator "
                           "FastpassHost::receive_schedule_pkt) instead of at its timeslot; "
                           "gives up the per-timeslot guarantees (doc §8)",
                           BooleanValue (false),
                           MakeBooleanAccessor (&FastpassFlowTransport::m_sendOnArrival),
                           MakeBooleanChecker ())
            .AddAttribute ("SprayPackets",
                           "Experiment knob: hosts spray data packets over the spines round "
                           "robin (NetSys/simulator ext/fastpassTopology.cpp, spray_counter++ "
                           "% 4) instead of the arbiter's spine (doc §8)",
                           BooleanValue (false),
                           MakeBooleanAccessor (&FastpassFlowTransport::m_spray),
                           MakeBooleanChecker ());
    return tid;
}

FastpassFlowTransport::FastpassFlowTransport () = default;

FastpassFlowTransport::~FastpassFlowTransport () = default;

void
FastpassFlowTransport::DoDispose ()
{
    m_hosts.clear ();
    m_arbiter = nullptr;
    m_arbiterNode = nullptr;
    m_topology = nullptr;
    FlowTransport::DoDispose ();
}

void
FastpassFlowTransport::ConfigureFabric (Ptr<ClosTopology> topology)
{
    // Fastpass needs no special queue: the fabric's FIFO ports stay (§1: zero queue by
    // construction).
    m_topology = topology;
    const uint64_t accessBps = topology->GetAccessRate ().GetBitRate ();
    m_timeslot =
        m_timeslotAttr.IsStrictlyPositive ()
            ? m_timeslotAttr
            : FabricNetDevice::TxTimeFor (
                  m_mssBytes + kFastpassHeaderBytes + kFabricHeaderBytes + m_guardBytes, accessBps);
    m_arbiterRate =
        m_arbiterRateAttr.GetBitRate () > 0 ? m_arbiterRateAttr : topology->GetAccessRate ();
    TimeValue perM;
    topology->GetAttribute ("PropagationPerM", perM);
    m_arbiterDelay = PicoSeconds (std::llround (m_arbiterCableM * perM.Get ().GetPicoSeconds ()));
}

Time
FastpassFlowTransport::OneWay (uint32_t from, uint32_t to, uint32_t wireBytes) const
{
    const uint32_t nHosts = m_topology->GetNHosts ();
    struct Hop
    {
        uint64_t bps;
        int64_t delayPs;
    };
    auto edge = [&] (uint32_t endpoint)
    {
        if (endpoint < nHosts)
        {
            return std::make_pair (m_topology->GetRackOfHost (endpoint),
                                   Hop{m_topology->GetAccessRate ().GetBitRate (),
                                       m_topology->GetIntraRackDelay ().GetPicoSeconds ()});
        }
        return std::make_pair (m_arbiterRack,
                               Hop{m_arbiterRate.GetBitRate (), m_arbiterDelay.GetPicoSeconds ()});
    };
    const auto [fromRack, fromHop] = edge (from);
    const auto [toRack, toHop] = edge (to);
    std::vector<Hop> hops{fromHop};
    if (fromRack != toRack)
    {
        const Hop spine{m_topology->GetSpineRate ().GetBitRate (),
                        m_topology->GetInterRackDelay ().GetPicoSeconds ()};
        hops.push_back (spine);
        hops.push_back (spine);
    }
    hops.push_back (toHop);
    const int64_t s = m_topology->GetSwitchingDelay ().GetPicoSeconds ();
    int64_t prevTx = FabricNetDevice::TxTimeFor (wireBytes, hops[0].bps).GetPicoSeconds ();
    int64_t start = 0;
    int64_t headArrival = hops[0].delayPs;
    for (std::size_t i = 1; i < hops.size (); ++i)
    {
        const int64_t tx = FabricNetDevice::TxTimeFor (wireBytes, hops[i].bps).GetPicoSeconds ();
        start = headArrival + s + std::max<int64_t> (0, prevTx - tx);
        headArrival = start + hops[i].delayPs;
        prevTx = tx;
    }
    return PicoSeconds (start + prevTx + hops.back ().delayPs);
}

void
FastpassFlowTransport::Install (Ptr<ClosTopology> topology)
{
    m_topology = topology;
    NS_ABORT_MSG_IF (m_arbiterRack >= topology->GetNRacks (), "FastpassFlowTransport::ArbiterRack "
                                                                  << m_arbiterRack << " >= racks "
                                                                  << topology->GetNRacks ());
    const uint32_t nHosts = topology->GetNHosts ();
    m_arbiterNode = CreateObject<Node> ();
    m_arbiterEndpoint =
        topology->AttachToTor (m_arbiterRack, m_arbiterNode, m_arbiterRate, m_arbiterDelay);

    // Allocation lead: every ALLOC frame of a pass reaches its host before the batch starts.
    const uint32_t allocWire =
        kFabricHeaderBytes + kFastpassHeaderBytes +
        m_batchSlots * (m_perDestination ? kFastpassDstAllocEntryBytes : kFastpassAllocEntryBytes);
    Time lead = m_leadAttr;
    if (lead.IsZero ())
    {
        Time slowest (0);
        for (uint32_t h = 0; h < nHosts; ++h)
        {
            slowest = std::max (slowest, OneWay (m_arbiterEndpoint, h, allocWire));
        }
        const Time drain =
            FabricNetDevice::TxTimeFor (allocWire, m_arbiterRate.GetBitRate ()) * (nHosts - 1);
        // + the longest control frame a host may have started just before its ALLOC came.
        const Time control = FabricNetDevice::TxTimeFor (
            kMaxControlWireBytes, m_topology->GetAccessRate ().GetBitRate ());
        // + one timeslot per switch port on the way (3 across racks, 1 within): the ALLOC
        // may find one timeslot's worth of data frames ahead of it at each (FIFO ports).
        // At the last port (towards the host) data frames of different timeslots arrive
        // over paths whose delays differ by up to `spread` (a frame from another rack vs
        // one from the same rack): at most 1 + spread / T of them queue there.
        const int64_t hops = topology->GetNRacks () > 1 ? 3 : 1;
        Time spread (0);
        if (topology->GetNRacks () > 1 && topology->GetHostsPerRack () > 1)
        {
            const uint32_t frame = m_mssBytes + kFastpassHeaderBytes + kFabricHeaderBytes;
            spread = OneWay (0, topology->GetHostsPerRack (), frame) - OneWay (0, 1, frame);
        }
        lead = m_processingLatency + slowest + drain + control + m_timeslot * hops + spread;
    }
    const int64_t slotPs = m_timeslot.GetPicoSeconds ();
    m_leadSlots = static_cast<uint64_t> ((lead.GetPicoSeconds () + slotPs - 1) / slotPs);
    const Time baseRtt = topology->BaseRtt (kFastpassHeaderBytes, m_mssBytes);
    m_rto = m_rtoAttr.IsStrictlyPositive ()
                ? m_rtoAttr
                : m_timeslot * static_cast<int64_t> (m_leadSlots + m_batchSlots) + 3 * baseRtt;

    FastpassArbiterConfig arbiterConfig;
    arbiterConfig.nHosts = nHosts;
    arbiterConfig.hostsPerRack = topology->GetHostsPerRack ();
    arbiterConfig.nSpines = topology->GetNSpines ();
    UintegerValue factor;
    topology->GetAttribute ("SpineRateFactor", factor);
    arbiterConfig.uplinkSlotCapacity = static_cast<uint32_t> (factor.Get ());
    arbiterConfig.timeslot = m_timeslot;
    arbiterConfig.batchSlots = m_batchSlots;
    arbiterConfig.processingLatency = m_processingLatency;
    arbiterConfig.leadSlots = m_leadSlots;
    // Any ALLOC has arrived a lead after it left; a REQUEST then takes less than a lead.
    arbiterConfig.lossHorizon = m_timeslot * static_cast<int64_t> (2 * m_leadSlots);
    arbiterConfig.order = m_order;
    arbiterConfig.perDestination = m_perDestination;
    m_arbiter = CreateObject<FastpassArbiter> ();
    m_arbiter->Setup (topology->GetAttachedDevice (m_arbiterEndpoint),
                      static_cast<uint16_t> (m_arbiterEndpoint), kFastpassProtocol);
    m_arbiter->SetConfig (arbiterConfig);

    FastpassHostConfig hostConfig;
    hostConfig.arbiter = static_cast<uint16_t> (m_arbiterEndpoint);
    hostConfig.timeslot = m_timeslot;
    hostConfig.mssBytes = m_mssBytes;
    hostConfig.retransmitTimeout = m_rto;
    hostConfig.perDestination = m_perDestination;
    hostConfig.requestGap = m_requestGapAttr.IsStrictlyPositive () ? m_requestGapAttr : m_timeslot;
    hostConfig.sendOnArrival = m_sendOnArrival;
    hostConfig.spray = m_spray;
    m_hosts.clear ();
    for (uint32_t i = 0; i < nHosts; ++i)
    {
        Ptr<FastpassHost> host = CreateObject<FastpassHost> ();
        host->Setup (topology->GetHostDevice (i), static_cast<uint16_t> (i), kFastpassProtocol);
        host->SetConfig (hostConfig);
        host->SetReceivedCallback (MakeCallback (&FastpassFlowTransport::OnReceived, this));
        m_hosts.push_back (host);
    }
    m_starts.SetStartCallback ([this] (uint64_t index) { StartFlow (m_flows[index]); });
    SetFlowTopology (topology);
    NS_LOG_INFO ("Fastpass: timeslot " << m_timeslot << " lead " << m_leadSlots << " slots, rto "
                                       << m_rto << ", arbiter endpoint " << m_arbiterEndpoint);
}

void
FastpassFlowTransport::DoAddFlow (const FlowSpec& flow)
{
    m_starts.Add (m_flows.size (), flow.startNs);
    m_flows.push_back (flow);
    m_starts.ScheduleNow ();
}

void
FastpassFlowTransport::StartFlow (const FlowSpec& flow)
{
    m_hosts[flow.dstHost]->StartReceiver (flow.flowId, static_cast<uint16_t> (flow.srcHost),
                                          flow.sizeBytes);
    m_hosts[flow.srcHost]->StartSender (flow.flowId, static_cast<uint16_t> (flow.dstHost),
                                        flow.sizeBytes);
}

void
FastpassFlowTransport::OnReceived (uint64_t flowId)
{
    NotifyFlowFinished (flowId);
}

uint32_t
FastpassFlowTransport::RequestWireBytes () const
{
    return kControlWireBytes + (m_perDestination ? kFastpassAreqEntryBytes : 0);
}

Time
FastpassFlowTransport::GetLoneFlowExtraDelay (const FlowSpec& flow) const
{
    NS_ABORT_MSG_IF (!m_arbiter, "FastpassFlowTransport: GetLoneFlowExtraDelay before Install");
    const int64_t startPs = flow.startNs * 1000;
    const int64_t slotPs = m_timeslot.GetPicoSeconds ();
    const int64_t epochPs = slotPs * m_batchSlots;
    const int64_t arrival =
        startPs + OneWay (flow.srcHost, m_arbiterEndpoint, RequestWireBytes ()).GetPicoSeconds ();
    const int64_t epoch = (arrival + epochPs - 1) / epochPs;
    const int64_t firstSlot =
        epoch * static_cast<int64_t> (m_batchSlots) + static_cast<int64_t> (m_leadSlots);
    // Packet i leaves at (firstSlot + i) T.  Only the last link (ToR -> destination, at the
    // access rate) can hold a packet back: a short packet gains on the full one ahead of it
    // when the ToR re-serializes 4x faster towards the spine.  Packet i may start there at
    // depart_i + OneWay(b_i) - tx(b_i) - d, and not before packet i - 1 ends.
    const uint64_t nPackets = (flow.sizeBytes + m_mssBytes - 1) / m_mssBytes;
    const uint64_t accessBps = m_topology->GetAccessRate ().GetBitRate ();
    const int64_t lastLinkDelay = m_topology->GetIntraRackDelay ().GetPicoSeconds ();
    int64_t end = 0;
    for (uint64_t i = 0; i < nPackets; ++i)
    {
        const uint64_t payload = std::min<uint64_t> (m_mssBytes, flow.sizeBytes - i * m_mssBytes);
        const uint32_t wire =
            static_cast<uint32_t> (payload) + kFastpassHeaderBytes + kFabricHeaderBytes;
        const int64_t tx = FabricNetDevice::TxTimeFor (wire, accessBps).GetPicoSeconds ();
        const int64_t depart = (firstSlot + static_cast<int64_t> (i)) * slotPs;
        const int64_t earliest = depart +
                                 OneWay (flow.srcHost, flow.dstHost, wire).GetPicoSeconds () - tx -
                                 lastLinkDelay;
        end = std::max (earliest, end) + tx;
    }
    const Time finish = PicoSeconds (end + lastLinkDelay);
    return finish - PicoSeconds (startPs) -
           m_topology->IdealFct (flow.srcHost, flow.dstHost, flow.sizeBytes, kFastpassHeaderBytes,
                                 m_mssBytes);
}

std::vector<std::pair<std::string, std::string>>
FastpassFlowTransport::GetStatistics () const
{
    uint64_t sent = 0;
    uint64_t retransmissions = 0;
    uint64_t late = 0;
    uint64_t unused = 0;
    uint64_t probes = 0;
    uint64_t repeated = 0;
    uint64_t requestFrames = 0;
    for (const Ptr<FastpassHost>& host : m_hosts)
    {
        requestFrames += host->GetRequestFrames ();
        sent += host->GetDataPacketsSent ();
        retransmissions += host->GetRetransmissions ();
        late += host->GetLateAllocations ();
        unused += host->GetUnusedSlots ();
        probes += host->GetProbes ();
        repeated += host->GetRepeatedRequests ();
    }
    return {
        {"fastpass.requests", std::to_string (m_arbiter ? m_arbiter->GetRequests () : 0)},
        {"fastpass.request_entries",
         std::to_string (m_arbiter ? m_arbiter->GetRequestEntries () : 0)},
        {"fastpass.request_frames_sent", std::to_string (requestFrames)},
        {"fastpass.grants", std::to_string (m_arbiter ? m_arbiter->GetGrants () : 0)},
        {"fastpass.passes", std::to_string (m_arbiter ? m_arbiter->GetPasses () : 0)},
        {"fastpass.alloc_frames", std::to_string (m_arbiter ? m_arbiter->GetAllocFrames () : 0)},
        {"fastpass.lost_grants", std::to_string (m_arbiter ? m_arbiter->GetLostGrants () : 0)},
        {"fastpass.data_packets_sent", std::to_string (sent)},
        {"fastpass.retransmissions", std::to_string (retransmissions)},
        {"fastpass.late_allocations", std::to_string (late)},
        {"fastpass.unused_slots", std::to_string (unused)},
        {"fastpass.probes", std::to_string (probes)},
        {"fastpass.repeated_requests", std::to_string (repeated)},
    };
}

uint32_t
FastpassFlowTransport::GetPerPacketHeaderBytes () const
{
    return kFastpassHeaderBytes;
}

uint32_t
FastpassFlowTransport::GetMssBytes () const
{
    return m_mssBytes;
}

std::vector<TypeId>
FastpassFlowTransport::GetConfigTypeIds () const
{
    return {GetInstanceTypeId ()};
}

std::vector<std::pair<std::string, std::string>>
FastpassFlowTransport::GetDerivedConfig () const
{
    return {
        {"fastpass.timeslot_ps", std::to_string (m_timeslot.GetPicoSeconds ())},
        {"fastpass.lead_slots", std::to_string (m_leadSlots)},
        {"fastpass.retransmit_timeout_ns", std::to_string (m_rto.GetNanoSeconds ())},
        {"fastpass.arbiter_endpoint", std::to_string (m_arbiterEndpoint)},
        {"fastpass.requests_mode",
         m_perDestination ? "per destination (FCP AREQ)" : "per flow (REQUEST)"},
        {"fastpass.slowdown_ideal",
         "ClosTopology::IdealFct (line rate from the flow start; excludes the request, "
         "allocation and timeslot wait)"},
    };
}

} // namespace ns3
