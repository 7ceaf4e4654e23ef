/*
 * disaggsim: the sending side of one pHost host (pHost CoNEXT'15 §3.1, §3.2).
 */
#include "phost-source.h"

#include "phost-header.h"
#include "phost-host.h"

#include "ns3/log.h"
#include "ns3/simulator.h"

#include <algorithm>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE ("PhostSource");

PhostSource::PhostSource (PhostHost& host, const PhostParams& params)
      : m_host (host)
      , m_params (params)
{
}

void
PhostSource::Stop ()
{
    Simulator::Cancel (m_sendEvent);
    for (auto& [id, flow] : m_flows)
    {
        Simulator::Cancel (flow.rtsTimer);
    }
    m_flows.clear ();
    m_ready.clear ();
}

void
PhostSource::StartFlow (uint64_t flowId, uint16_t dst, uint64_t sizeBytes)
{
    Flow& flow = m_flows[flowId];
    flow.dst = dst;
    flow.sizeBytes = sizeBytes;
    flow.nPackets = static_cast<uint32_t> ((sizeBytes + m_params.mssBytes - 1) / m_params.mssBytes);
    flow.freeLimit = std::min (flow.nPackets, m_params.FreeTokens (m_host.GetHostIndex (), dst));
    flow.unsent = flow.nPackets;
    flow.sent.assign (flow.nPackets, false);
    flow.order = m_nextOrder++;
    if (flow.freeLimit > 0)
    {
        MakeReady (flowId, flow);
    }
    // The RTS leaves now: in the first free packet if that packet leaves now, else alone.
    const bool idle = !m_sendEvent.IsRunning () && Simulator::Now () >= m_nextSend;
    if (flow.freeLimit > 0 && idle && m_ready.begin ()->second == flowId)
    {
        flow.rtsInFirstPacket = true;
    }
    else
    {
        SendRts (flowId, flow);
    }
    flow.rtsTimer = Simulator::Schedule (m_params.retransmissionTimeout, &PhostSource::RtsTimeout,
                                         this, flowId);
    Kick ();
}

void
PhostSource::SendRts (uint64_t flowId, const Flow& flow)
{
    m_host.SendControl (PhostHeader::RTS, flowId, 0, flow.sizeBytes, flow.dst);
}

void
PhostSource::RtsTimeout (uint64_t flowId)
{
    auto it = m_flows.find (flowId);
    if (it == m_flows.end () || it->second.tokenSeen)
    {
        return;
    }
    ++m_rtsResent;
    SendRts (flowId, it->second);
    // Exponential backoff: under a heavy incast the destination may rightly keep a flow
    // waiting for many timeouts (SRPT); retrying at a fixed interval floods its port.
    it->second.rtsBackoff = std::min<uint32_t> (it->second.rtsBackoff * 2, 1024);
    it->second.rtsTimer = Simulator::Schedule (m_params.retransmissionTimeout *
                                                   static_cast<int64_t> (it->second.rtsBackoff),
                                               &PhostSource::RtsTimeout, this, flowId);
}

void
PhostSource::MakeReady (uint64_t flowId, Flow& flow)
{
    if (!flow.ready)
    {
        flow.ready = true;
        m_ready.insert (KeyOf (flow, flowId));
    }
}

void
PhostSource::ReceiveToken (uint64_t flowId, uint32_t packet)
{
    auto it = m_flows.find (flowId);
    if (it == m_flows.end () || packet >= it->second.nPackets)
    {
        return; // a late token of a finished flow
    }
    Flow& flow = it->second;
    flow.tokenSeen = true;
    Simulator::Cancel (flow.rtsTimer);
    flow.tokens.emplace_back (packet, Simulator::Now ());
    MakeReady (flowId, flow);
    Kick ();
}

void
PhostSource::ReceiveAck (uint64_t flowId)
{
    auto it = m_flows.find (flowId);
    if (it == m_flows.end ())
    {
        return;
    }
    Simulator::Cancel (it->second.rtsTimer);
    if (it->second.ready)
    {
        m_ready.erase (KeyOf (it->second, flowId));
    }
    m_flows.erase (it);
}

void
PhostSource::Kick ()
{
    if (m_sendEvent.IsRunning ())
    {
        return;
    }
    const Time now = Simulator::Now ();
    if (now >= m_nextSend)
    {
        SendNext ();
    }
    else
    {
        m_sendEvent = Simulator::Schedule (m_nextSend - now, &PhostSource::SendNext, this);
    }
}

void
PhostSource::SendNext ()
{
    const Time now = Simulator::Now ();
    // The access link also carries this host's control packets (its tokens and ACKs as a
    // destination): hand the NIC a data packet only when nothing waits there, so the NIC
    // queue never grows behind the pacer.
    const uint32_t waiting = m_host.GetDevice ()->GetQueue ()->GetNBytes ();
    if (waiting > 0 && !m_ready.empty ())
    {
        m_nextSend = now + FabricNetDevice::TxTimeFor (waiting, m_params.accessBitRate);
        m_sendEvent = Simulator::Schedule (m_nextSend - now, &PhostSource::SendNext, this);
        return;
    }
    while (!m_ready.empty ())
    {
        const uint64_t flowId = m_ready.begin ()->second;
        Flow& flow = m_flows.at (flowId);
        m_ready.erase (m_ready.begin ());
        uint32_t packet = 0;
        bool found = false;
        bool onFree = false;
        // A received token first: it lapses TokenExpiry after its arrival, a free token
        // never does (the authors' source, too, spends its tokens earliest deadline first:
        // NetSys/simulator ext/capabilityflow.cpp, CapabilityComparator).
        while (!flow.tokens.empty ())
        {
            const auto [granted, arrival] = flow.tokens.front ();
            flow.tokens.pop_front ();
            if (arrival + m_params.tokenExpiry < now)
            {
                ++m_tokensExpired; // §3.1: a token not used in time lapses
                continue;
            }
            packet = granted;
            found = true;
            break;
        }
        // A free packet already sent on a token (a re-issued grant) is not sent again.
        while (flow.nextFree < flow.freeLimit && flow.sent[flow.nextFree])
        {
            ++flow.nextFree;
        }
        if (!found && flow.nextFree < flow.freeLimit)
        {
            packet = flow.nextFree++;
            found = true;
            onFree = true;
        }
        if (!found)
        {
            flow.ready = false;
            continue;
        }
        const bool rts = flow.rtsInFirstPacket;
        flow.rtsInFirstPacket = false;
        if (!flow.sent[packet])
        {
            flow.sent[packet] = true;
            --flow.unsent;
        }
        const uint32_t level = onFree ? m_params.freeDataLevel : m_params.tokenDataLevel;
        const uint32_t wireBytes =
            m_host.SendData (flowId, packet, flow.sizeBytes, flow.dst, level, rts);
        ++m_dataSent;
        m_nextSend = now + FabricNetDevice::TxTimeFor (wireBytes, m_params.accessBitRate);
        if (flow.nextFree < flow.freeLimit || !flow.tokens.empty ())
        {
            m_ready.insert (KeyOf (flow, flowId));
        }
        else
        {
            flow.ready = false;
        }
        m_sendEvent = Simulator::Schedule (m_nextSend - now, &PhostSource::SendNext, this);
        return;
    }
}

} // namespace ns3
