/*
 * disaggsim: the receiving side of one pHost host (pHost CoNEXT'15 §3.1, §3.2).
 */
#include "phost-destination.h"

#include "phost-header.h"
#include "phost-host.h"

#include "ns3/log.h"
#include "ns3/simulator.h"

#include <algorithm>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE ("PhostDestination");

PhostDestination::PhostDestination (PhostHost& host, const PhostParams& params)
      : m_host (host)
      , m_params (params)
{
}

void
PhostDestination::Stop ()
{
    Simulator::Cancel (m_tick);
    for (auto& [id, flow] : m_flows)
    {
        Simulator::Cancel (flow.wake);
        Simulator::Cancel (flow.downgradeEnd);
    }
    m_flows.clear ();
    m_active.clear ();
}

PhostDestination::Flow&
PhostDestination::Register (uint64_t flowId, uint16_t src, uint64_t sizeBytes, bool fromRts)
{
    auto [it, inserted] = m_flows.try_emplace (flowId);
    Flow& flow = it->second;
    if (inserted)
    {
        flow.src = src;
        flow.sizeBytes = sizeBytes;
        flow.nPackets =
            static_cast<uint32_t> ((sizeBytes + m_params.mssBytes - 1) / m_params.mssBytes);
        flow.received.assign (flow.nPackets, false);
        flow.grantedAt.assign (flow.nPackets, Time (-1));
        flow.counted.assign (flow.nPackets, false);
        flow.order = m_nextOrder++;
        // The free packets (§3.1) count as granted now.
        flow.nextNew = std::min (flow.nPackets, m_params.FreeTokens (src, m_host.GetHostIndex ()));
        const Time now = Simulator::Now ();
        for (uint32_t p = 0; p < flow.nextNew; ++p)
        {
            flow.granted.emplace_back (p, now);
            NoteGrant (flowId, flow, p, now);
        }
        if (fromRts && flow.nextNew > 0 && m_params.grantAfterFirstData)
        {
            // The RTS came alone: its source is busy with another flow and has not started
            // this one's free packets; a token now would reach it before it can be spent.
            // Grant from the first data packet on (or, if every free packet is lost, once
            // they are due for re-issue).
            flow.awaitingData = true;
            Deactivate (flowId, flow, now + m_params.retransmissionTimeout);
        }
        else
        {
            Activate (flowId);
        }
    }
    return flow;
}

void
PhostDestination::ReceiveRts (uint64_t flowId, uint16_t src, uint64_t sizeBytes)
{
    if (m_finished.count (flowId) != 0)
    {
        m_host.SendControl (PhostHeader::ACK, flowId, 0, sizeBytes, src); // the ACK was lost
        return;
    }
    Register (flowId, src, sizeBytes, true);
}

void
PhostDestination::ReceiveData (uint64_t flowId, uint16_t src, uint64_t sizeBytes, uint32_t packet)
{
    // A known flow is not finished: one hash lookup per data packet in the common case.
    auto known = m_flows.find (flowId);
    if (known == m_flows.end () && m_finished.count (flowId) != 0)
    {
        ++m_duplicates;
        return;
    }
    Flow& flow = known != m_flows.end () ? known->second : Register (flowId, src, sizeBytes, false);
    flow.tokensSinceData = 0; // the source answers
    if (packet >= flow.nPackets || flow.received[packet])
    {
        ++m_duplicates;
        return;
    }
    if (flow.active)
    {
        m_active.erase (KeyOf (flow, flowId));
    }
    flow.received[packet] = true;
    ++flow.nReceived;
    if (flow.counted[packet])
    {
        flow.counted[packet] = false;
        --m_inFlight; // answered while still counted
    }
    if (flow.nReceived == flow.nPackets)
    {
        Finish (flowId);
        return;
    }
    if (flow.active)
    {
        m_active.insert (KeyOf (flow, flowId));
    }
    else if (flow.awaitingData)
    {
        flow.awaitingData = false; // its source has started it: grant from now on
        Simulator::Cancel (flow.wake);
        Activate (flowId);
    }
}

void
PhostDestination::Finish (uint64_t flowId)
{
    Flow& flow = m_flows.at (flowId);
    Simulator::Cancel (flow.wake);
    Simulator::Cancel (flow.downgradeEnd);
    const uint16_t src = flow.src;
    const uint64_t sizeBytes = flow.sizeBytes;
    m_flows.erase (flowId);
    m_finished.insert (flowId);
    m_host.SendControl (PhostHeader::ACK, flowId, 0, sizeBytes, src);
    m_host.NotifyFinished (flowId);
}

void
PhostDestination::Activate (uint64_t flowId)
{
    auto it = m_flows.find (flowId);
    if (it == m_flows.end () || it->second.active)
    {
        return;
    }
    it->second.active = true;
    it->second.awaitingData = false;
    m_active.insert (KeyOf (it->second, flowId));
    EnsureTick ();
}

void
PhostDestination::Deactivate (uint64_t flowId, Flow& flow, Time until)
{
    flow.active = false;
    m_active.erase (KeyOf (flow, flowId));
    Simulator::Cancel (flow.wake);
    flow.wake =
        Simulator::Schedule (until - Simulator::Now (), &PhostDestination::Activate, this, flowId);
}

void
PhostDestination::SetDowngraded (uint64_t flowId, bool downgraded)
{
    auto it = m_flows.find (flowId);
    if (it == m_flows.end () || it->second.downgraded == downgraded)
    {
        return;
    }
    Flow& flow = it->second;
    if (flow.active)
    {
        m_active.erase (KeyOf (flow, flowId));
    }
    flow.downgraded = downgraded;
    if (flow.active)
    {
        m_active.insert (KeyOf (flow, flowId));
    }
}

bool
PhostDestination::NextGrant (Flow& flow, uint32_t& packet, bool& reissue)
{
    const Time now = Simulator::Now ();
    while (!flow.granted.empty () && flow.received[flow.granted.front ().first])
    {
        flow.granted.pop_front ();
    }
    if (!flow.granted.empty () &&
        flow.granted.front ().second + m_params.retransmissionTimeout <= now)
    {
        packet = flow.granted.front ().first;
        flow.granted.pop_front ();
        reissue = true;
        return true;
    }
    if (flow.nextNew < flow.nPackets)
    {
        packet = flow.nextNew++;
        reissue = false;
        return true;
    }
    return false;
}

void
PhostDestination::EnsureTick ()
{
    if (m_tick.IsRunning ())
    {
        return;
    }
    const Time now = Simulator::Now ();
    const Time at = m_anyToken ? std::max (now, m_lastToken + m_params.packetTime) : now;
    m_tick = Simulator::Schedule (at - now, &PhostDestination::Tick, this);
}

void
PhostDestination::NoteGrant (uint64_t flowId, Flow& flow, uint32_t packet, Time now)
{
    flow.grantedAt[packet] = now;
    m_grants.push_back (Grant{now, flowId, packet});
    if (!flow.counted[packet])
    {
        flow.counted[packet] = true;
        ++m_inFlight;
    }
}

void
PhostDestination::AgeGrants (Time now)
{
    while (!m_grants.empty () && m_grants.front ().at < now - m_params.inFlightHorizon)
    {
        const Grant grant = m_grants.front ();
        m_grants.pop_front ();
        auto it = m_flows.find (grant.flowId);
        if (it == m_flows.end ())
        {
            continue; // finished: every grant of it was answered
        }
        Flow& flow = it->second;
        // Still counted unless it arrived, or a later grant of the packet replaced this one.
        if (flow.counted[grant.packet] && flow.grantedAt[grant.packet] == grant.at)
        {
            flow.counted[grant.packet] = false;
            --m_inFlight;
        }
    }
}

void
PhostDestination::Tick ()
{
    const Time now = Simulator::Now ();
    AgeGrants (now);
    if (m_inFlight >= m_params.inFlightWindow && !m_active.empty ())
    {
        // A BDP of granted packets is still on its way: skip this slot, so a queue that
        // free packets built at the access link drains (doc/phost.md §3).
        ++m_slotsSkipped;
        m_tick = Simulator::Schedule (m_params.packetTime, &PhostDestination::Tick, this);
        return;
    }
    auto it = m_active.begin ();
    while (it != m_active.end ())
    {
        const uint64_t flowId = std::get<3> (*it);
        Flow& flow = m_flows.at (flowId);
        uint32_t packet = 0;
        bool reissue = false;
        if (!NextGrant (flow, packet, reissue))
        {
            // Every packet granted, none due for re-issue: wait for the oldest grant's timeout.
            ++it;
            Deactivate (flowId, flow,
                        flow.granted.front ().second + m_params.retransmissionTimeout);
            continue;
        }
        flow.granted.emplace_back (packet, now);
        NoteGrant (flowId, flow, packet, now);
        m_host.SendControl (PhostHeader::TOKEN, flowId, packet, flow.sizeBytes, flow.src);
        m_host.NotifyTokenSent (flowId, packet);
        ++m_tokensSent;
        m_tokensReissued += reissue ? 1 : 0;
        m_lastToken = now;
        m_anyToken = true;
        if (flow.tokensSinceData++ == 0)
        {
            flow.firstUnanswered = now;
        }
        // §3.2: tokens that had time to be answered (a round trip and a queue) and were not.
        if (flow.tokensSinceData >= m_params.downgradeTokens &&
            now - flow.firstUnanswered >= m_params.answerTime)
        {
            // §3.2: no packet back for these tokens: the source serves another flow.
            ++m_downgrades;
            flow.tokensSinceData = 0;
            m_host.NotifyDowngraded (flowId);
            SetDowngraded (flowId, true);
            // Its source is not answering: its grants no longer hold the in-flight window.
            for (const auto& [granted, at] : flow.granted)
            {
                if (flow.counted[granted])
                {
                    flow.counted[granted] = false;
                    --m_inFlight;
                }
            }
            Simulator::Cancel (flow.downgradeEnd);
            flow.downgradeEnd = Simulator::Schedule (
                m_params.downgradeTime, &PhostDestination::SetDowngraded, this, flowId, false);
        }
        m_tick = Simulator::Schedule (m_params.packetTime, &PhostDestination::Tick, this);
        return;
    }
}

} // namespace ns3
