/*
 * disaggsim: the Fastpass arbiter, a node on the fabric (Perry et al. SIGCOMM'14 §3, §4).
 */
#include "fastpass-arbiter.h"

#include "topologies/model/fabric-header.h"

#include "ns3/abort.h"
#include "ns3/log.h"
#include "ns3/packet.h"
#include "ns3/simulator.h"
#include "ns3/trace-source-accessor.h"

#include <algorithm>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE ("FastpassArbiter");
NS_OBJECT_ENSURE_REGISTERED (FastpassArbiter);

TypeId
FastpassArbiter::GetTypeId ()
{
    static TypeId tid =
        TypeId ("ns3::FastpassArbiter")
            .SetParent<FabricHost> ()
            .SetGroupName ("Disaggsim")
            .AddConstructor<FastpassArbiter> ()
            .AddTraceSource ("SlotAllocated",
                             "A timeslot was allocated: its grants and the unserved demands",
                             MakeTraceSourceAccessor (&FastpassArbiter::m_slotTrace),
                             "ns3::FastpassArbiter::SlotAllocatedCallback");
    return tid;
}

FastpassArbiter::FastpassArbiter () = default;

FastpassArbiter::~FastpassArbiter () = default;

void
FastpassArbiter::SetConfig (const FastpassArbiterConfig& config)
{
    NS_ABORT_MSG_IF (config.batchSlots == 0 || config.batchSlots > 256,
                     "FastpassArbiter: batchSlots must be in 1..256");
    NS_ABORT_MSG_IF (config.timeslot.IsZero (), "FastpassArbiter: zero timeslot");
    m_config = config;
    m_srcFlows.assign (config.nHosts, 0);
    m_dstFlows.assign (config.nHosts, 0);
    m_srcStamp.assign (config.nHosts, 0);
    m_dstStamp.assign (config.nHosts, 0);
}

uint64_t
FastpassArbiter::OrderKey (const Demand& demand) const
{
    if (m_config.order == FastpassOrder::FEWEST_REMAINING)
    {
        return m_config.perDestination ? std::min (demand.shortest, demand.remaining)
                                       : demand.remaining;
    }
    return demand.lastAllocated;
}

void
FastpassArbiter::Erase (uint64_t flowId, const Demand& demand)
{
    m_order.erase ({OrderKey (demand), flowId});
    if (--m_srcFlows[demand.src] == 0)
    {
        --m_activeSrcs;
    }
    if (--m_dstFlows[demand.dst] == 0)
    {
        --m_activeDsts;
    }
}

void
FastpassArbiter::SetDemand (uint64_t flowId, uint16_t src, uint16_t dst, uint32_t remaining,
                            uint32_t shortest)
{
    NS_ABORT_MSG_IF (src >= m_config.nHosts || dst >= m_config.nHosts,
                     "FastpassArbiter: request of flow " << flowId << " names host " << src
                                                         << " or " << dst);
    auto it = m_demands.find (flowId);
    if (it != m_demands.end ())
    {
        Erase (flowId, it->second);
        if (remaining == 0)
        {
            m_demands.erase (it);
            return;
        }
        it->second.remaining = remaining;
        it->second.shortest = std::max<uint32_t> (shortest, 1);
    }
    else
    {
        if (remaining == 0)
        {
            return;
        }
        it = m_demands
                 .emplace (flowId, Demand{src, dst, remaining, 0, std::max<uint32_t> (shortest, 1)})
                 .first;
    }
    const Demand& demand = it->second;
    m_order.insert ({OrderKey (demand), flowId});
    if (m_srcFlows[src]++ == 0)
    {
        ++m_activeSrcs;
    }
    if (m_dstFlows[dst]++ == 0)
    {
        ++m_activeDsts;
    }
    SchedulePass ();
}

void
FastpassArbiter::DoReceive (Ptr<Packet> packet, const FabricHeader& frame, Time /* now */)
{
    FastpassHeader header;
    packet->RemoveHeader (header);
    if (header.type == FastpassHeader::AREQ && m_config.perDestination)
    {
        ++m_requests;
        const auto src = static_cast<uint16_t> (header.value0);
        for (const FastpassAreqEntry& entry : header.areqs)
        {
            ++m_requestEntries;
            OnRequest (FastpassPairKey (src, entry.dst), src, entry.dst, entry.total,
                       entry.received, entry.shortest);
        }
        return;
    }
    if (header.type != FastpassHeader::REQUEST || m_config.perDestination)
    {
        NS_LOG_WARN ("arbiter: unexpected frame type " << static_cast<uint32_t> (header.type));
        return;
    }
    ++m_requests;
    ++m_requestEntries;
    OnRequest (header.flowId, static_cast<uint16_t> (header.value0 >> 16),
               static_cast<uint16_t> (header.value0 & 0xFFFF), header.value1,
               static_cast<uint32_t> (header.slot), header.value1);
}

void
FastpassArbiter::OnRequest (uint64_t flowId, uint16_t src, uint16_t dst, uint32_t total,
                            uint32_t received, uint32_t shortest)
{
    if (total == 0 && !m_config.perDestination)
    {
        SetDemand (flowId, src, dst, 0, 0);
        m_granted.erase (flowId);
        return;
    }
    Granted& granted = m_granted[flowId];
    if (granted.slots > received && Simulator::Now () - granted.lastSent > m_config.lossHorizon)
    {
        NS_LOG_INFO ("flow " << flowId << ": " << granted.slots - received
                             << " granted timeslots lost with their ALLOC");
        m_lostGrants += granted.slots - received;
        granted.slots = received;
    }
    SetDemand (flowId, src, dst, total > granted.slots ? total - granted.slots : 0, shortest);
}

void
FastpassArbiter::SchedulePass ()
{
    if (m_passEvent.IsRunning ())
    {
        return;
    }
    // Passes run at multiples of the batch length (the arbiter's epoch clock).
    const int64_t epochPs = m_config.timeslot.GetPicoSeconds () * m_config.batchSlots;
    const int64_t nowPs = Simulator::Now ().GetPicoSeconds ();
    const int64_t nextPs = (nowPs + epochPs - 1) / epochPs * epochPs;
    m_passEvent = Simulator::Schedule (PicoSeconds (nextPs - nowPs), &FastpassArbiter::Pass, this);
}

void
FastpassArbiter::Pass ()
{
    ++m_passes;
    const int64_t epochPs = m_config.timeslot.GetPicoSeconds () * m_config.batchSlots;
    const uint64_t epoch = static_cast<uint64_t> (Simulator::Now ().GetPicoSeconds () / epochPs);
    const uint64_t batchFirstSlot = epoch * m_config.batchSlots + m_config.leadSlots;
    std::vector<std::vector<FastpassAllocEntry>> perSender (m_config.nHosts);
    for (uint32_t i = 0; i < m_config.batchSlots && !m_demands.empty (); ++i)
    {
        AllocateSlot (batchFirstSlot + i, perSender, batchFirstSlot);
    }
    if (m_config.processingLatency.IsZero ())
    {
        SendAllocations (batchFirstSlot, std::move (perSender));
    }
    else
    {
        Simulator::Schedule (m_config.processingLatency, &FastpassArbiter::SendAllocations, this,
                             batchFirstSlot, std::move (perSender));
    }
    if (!m_demands.empty ())
    {
        m_passEvent = Simulator::Schedule (PicoSeconds (epochPs), &FastpassArbiter::Pass, this);
    }
}

void
FastpassArbiter::AllocateSlot (uint64_t slot,
                               std::vector<std::vector<FastpassAllocEntry>>& perSender,
                               uint64_t batchFirstSlot)
{
    const uint64_t stamp = slot + 1;
    const uint32_t nRacks = (m_config.nHosts + m_config.hostsPerRack - 1) / m_config.hostsPerRack;
    const uint32_t rackCapacity = m_config.nSpines * m_config.uplinkSlotCapacity;
    std::vector<uint32_t> up (nRacks, 0);
    std::vector<uint32_t> down (nRacks, 0);
    std::vector<FastpassGrant> grants;
    uint32_t usedSrcs = 0;
    uint32_t usedDsts = 0;
    const bool traced = !m_slotTrace.IsEmpty ();
    FastpassSlotRecord record;
    for (const auto& [key, flowId] : m_order)
    {
        if (usedSrcs == m_activeSrcs || usedDsts == m_activeDsts)
        {
            break; // every sender or every receiver with demand is matched: maximal
        }
        const Demand& demand = m_demands.find (flowId)->second;
        if (m_srcStamp[demand.src] == stamp || m_dstStamp[demand.dst] == stamp)
        {
            continue;
        }
        const uint32_t srcRack = demand.src / m_config.hostsPerRack;
        const uint32_t dstRack = demand.dst / m_config.hostsPerRack;
        if (srcRack != dstRack)
        {
            if (up[srcRack] == rackCapacity || down[dstRack] == rackCapacity)
            {
                continue;
            }
            ++up[srcRack];
            ++down[dstRack];
        }
        m_srcStamp[demand.src] = stamp;
        m_dstStamp[demand.dst] = stamp;
        ++usedSrcs;
        ++usedDsts;
        grants.push_back (FastpassGrant{flowId, demand.src, demand.dst, kFabricAnyUplink});
    }
    if (traced)
    {
        for (const auto& [flowId, demand] : m_demands)
        {
            if (m_srcStamp[demand.src] != stamp && m_dstStamp[demand.dst] != stamp)
            {
                record.unserved.emplace_back (demand.src, demand.dst);
            }
            else
            {
                bool granted = false;
                for (const FastpassGrant& grant : grants)
                {
                    granted = granted || grant.flowId == flowId;
                }
                if (!granted)
                {
                    record.unserved.emplace_back (demand.src, demand.dst);
                }
            }
        }
    }
    ColourPaths (grants);
    for (const FastpassGrant& grant : grants)
    {
        auto it = m_demands.find (grant.flowId);
        Demand& demand = it->second;
        m_order.erase ({OrderKey (demand), grant.flowId});
        --demand.remaining;
        demand.shortest = std::max<uint32_t> (demand.shortest, 2) - 1;
        Granted& granted = m_granted[grant.flowId];
        ++granted.slots;
        granted.lastSent = Simulator::Now () + m_config.processingLatency;
        demand.lastAllocated = stamp;
        ++m_grants;
        perSender[grant.src].push_back (FastpassAllocEntry{
            grant.flowId, static_cast<uint8_t> (slot - batchFirstSlot), grant.spine});
        if (demand.remaining == 0)
        {
            // Erase's set lookup misses (already removed); it fixes the counters.
            Erase (grant.flowId, demand);
            m_demands.erase (it);
        }
        else
        {
            m_order.insert ({OrderKey (demand), grant.flowId});
        }
    }
    if (traced)
    {
        record.slot = slot;
        record.grants = std::move (grants);
        m_slotTrace (record);
    }
}

void
FastpassArbiter::ColourPaths (std::vector<FastpassGrant>& grants) const
{
    const uint32_t nRacks = (m_config.nHosts + m_config.hostsPerRack - 1) / m_config.hostsPerRack;
    const uint32_t colours = m_config.nSpines * m_config.uplinkSlotCapacity;
    // edgeAt[side][rack * colours + c]: the grant coloured c at that rack, or -1.
    std::vector<int32_t> left (static_cast<std::size_t> (nRacks) * colours, -1);
    std::vector<int32_t> right (static_cast<std::size_t> (nRacks) * colours, -1);
    std::vector<uint32_t> colourOf (grants.size (), UINT32_MAX);
    auto freeColour = [colours] (const std::vector<int32_t>& side, uint32_t rack)
    {
        for (uint32_t c = 0; c < colours; ++c)
        {
            if (side[rack * colours + c] < 0)
            {
                return c;
            }
        }
        return UINT32_MAX;
    };
    std::vector<int32_t> path;
    for (std::size_t e = 0; e < grants.size (); ++e)
    {
        const uint32_t u = grants[e].src / m_config.hostsPerRack;
        const uint32_t v = grants[e].dst / m_config.hostsPerRack;
        if (u == v)
        {
            continue;
        }
        const uint32_t a = freeColour (left, u);
        const uint32_t b = freeColour (right, v);
        NS_ABORT_MSG_IF (a == UINT32_MAX || b == UINT32_MAX,
                         "FastpassArbiter: ToR degree above the colour count");
        if (right[v * colours + a] >= 0)
        {
            // Swap colours a and b along the alternating path from v (edges a, b, a, ...):
            // it cannot reach u (König), so afterwards a is free at both ends.
            path.clear ();
            bool atRight = true;
            uint32_t node = v;
            uint32_t want = a;
            while (true)
            {
                const int32_t edge =
                    atRight ? right[node * colours + want] : left[node * colours + want];
                if (edge < 0)
                {
                    break;
                }
                path.push_back (edge);
                node = atRight ? grants[edge].src / m_config.hostsPerRack
                               : grants[edge].dst / m_config.hostsPerRack;
                atRight = !atRight;
                want = want == a ? b : a;
            }
            for (int32_t edge : path)
            {
                const uint32_t eu = grants[edge].src / m_config.hostsPerRack;
                const uint32_t ev = grants[edge].dst / m_config.hostsPerRack;
                left[eu * colours + colourOf[edge]] = -1;
                right[ev * colours + colourOf[edge]] = -1;
            }
            for (int32_t edge : path)
            {
                const uint32_t eu = grants[edge].src / m_config.hostsPerRack;
                const uint32_t ev = grants[edge].dst / m_config.hostsPerRack;
                colourOf[edge] = colourOf[edge] == a ? b : a;
                left[eu * colours + colourOf[edge]] = edge;
                right[ev * colours + colourOf[edge]] = edge;
            }
        }
        colourOf[e] = a;
        left[u * colours + a] = static_cast<int32_t> (e);
        right[v * colours + a] = static_cast<int32_t> (e);
    }
    for (std::size_t e = 0; e < grants.size (); ++e)
    {
        if (colourOf[e] != UINT32_MAX)
        {
            grants[e].spine = static_cast<uint16_t> (colourOf[e] % m_config.nSpines);
        }
    }
}

void
FastpassArbiter::SendAllocations (uint64_t batchFirstSlot,
                                  std::vector<std::vector<FastpassAllocEntry>> perSender)
{
    for (uint32_t host = 0; host < perSender.size (); ++host)
    {
        if (perSender[host].empty ())
        {
            continue;
        }
        FastpassHeader header;
        header.type = m_config.perDestination ? FastpassHeader::DST_ALLOC : FastpassHeader::ALLOC;
        header.slot = batchFirstSlot;
        header.value1 = static_cast<uint32_t> (perSender[host].size ());
        header.allocs = std::move (perSender[host]);
        Ptr<Packet> packet = Create<Packet> ();
        packet->AddHeader (header);
        FabricHeader frame;
        frame.srcHost = GetHostIndex ();
        frame.dstHost = static_cast<uint16_t> (host);
        frame.protocol = kFastpassProtocol;
        frame.flowHash = host;
        ++m_allocFrames;
        Send (packet, frame);
    }
}

} // namespace ns3
