/*
 * disaggsim: the Fastpass endpoint of one host: its flows' senders and receivers.
 */
#include "fastpass-host.h"

#include "topologies/model/fabric-header.h"

#include "ns3/abort.h"
#include "ns3/log.h"
#include "ns3/packet.h"
#include "ns3/simulator.h"

#include <algorithm>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE ("FastpassHost");
NS_OBJECT_ENSURE_REGISTERED (FastpassHost);

TypeId
FastpassHost::GetTypeId ()
{
    static TypeId tid = TypeId ("ns3::FastpassHost")
                            .SetParent<FabricHost> ()
                            .SetGroupName ("Disaggsim")
                            .AddConstructor<FastpassHost> ();
    return tid;
}

FastpassHost::FastpassHost () = default;

FastpassHost::~FastpassHost () = default;

void
FastpassHost::DoDispose ()
{
    m_timer.Cancel ();
    m_controlEvent.Cancel ();
    m_areqEvent.Cancel ();
    m_destinations.clear ();
    m_dirty.clear ();
    m_control.clear ();
    m_senders.clear ();
    m_receivers.clear ();
    m_received = MakeNullCallback<void, uint64_t> ();
    m_senderDone = MakeNullCallback<void, uint64_t> ();
    FabricHost::DoDispose ();
}

void
FastpassHost::SetConfig (const FastpassHostConfig& config)
{
    m_config = config;
}

void
FastpassHost::SetReceivedCallback (Callback<void, uint64_t> callback)
{
    m_received = callback;
}

void
FastpassHost::SetSenderDoneCallback (Callback<void, uint64_t> callback)
{
    m_senderDone = callback;
}

void
FastpassHost::SendControl (uint16_t dst, FastpassHeader& header, uint64_t flowId)
{
    header.flowId = flowId;
    Ptr<Packet> packet = Create<Packet> ();
    packet->AddHeader (header);
    FabricHeader frame;
    frame.srcHost = GetHostIndex ();
    frame.dstHost = dst;
    frame.protocol = kFastpassProtocol;
    frame.flowHash = static_cast<uint32_t> (flowId * 0x9E3779B97F4A7C15ULL >> 32);
    m_control.emplace_back (packet, frame);
    TrySendControl ();
}

void
FastpassHost::Transmit (Ptr<Packet> packet, const FabricHeader& frame)
{
    const Time now = Simulator::Now ();
    const Time start = std::max (now, m_nicFreeAt);
    m_nicFreeAt = start + GetDevice ()->TxTime (packet->GetSize () + kFabricHeaderBytes);
    Send (packet, frame);
}

uint32_t
FastpassHost::NeededFor (const Destination& destination) const
{
    uint32_t needed = 0;
    for (uint64_t flowId : destination.flows)
    {
        const Sender& sender = m_senders.at (flowId);
        needed +=
            static_cast<uint32_t> (sender.retransmit.size ()) + (sender.nPackets - sender.nextNew);
    }
    return needed;
}

std::pair<uint64_t, uint32_t>
FastpassHost::ShortestUncovered (const Destination& destination) const
{
    std::vector<std::pair<uint32_t, uint64_t>> needs; // (need, flow), served in this order
    for (uint64_t flowId : destination.flows)
    {
        const Sender& sender = m_senders.at (flowId);
        const uint32_t need =
            static_cast<uint32_t> (sender.retransmit.size ()) + (sender.nPackets - sender.nextNew);
        if (need > 0)
        {
            needs.emplace_back (sender.retransmit.empty () ? need : 0, flowId);
        }
    }
    std::sort (needs.begin (), needs.end ());
    uint32_t covered = destination.pending;
    for (const auto& [key, flowId] : needs)
    {
        const Sender& sender = m_senders.at (flowId);
        const uint32_t need =
            static_cast<uint32_t> (sender.retransmit.size ()) + (sender.nPackets - sender.nextNew);
        if (need > covered)
        {
            return {flowId, need - covered};
        }
        covered -= need;
    }
    return {UINT64_MAX, 0};
}

Ptr<Packet>
FastpassHost::BuildAreq (FabricHeader& frame, uint32_t maxEntries, uint32_t& nEntries) const
{
    FastpassHeader header;
    header.type = FastpassHeader::AREQ;
    header.value0 = GetHostIndex ();
    for (uint16_t dst : m_dirty)
    {
        if (header.areqs.size () == maxEntries)
        {
            break;
        }
        const Destination& destination = m_destinations.at (dst);
        // Cumulative: the timeslots received + those still needed beyond the allocated ones
        // not reached yet.  A lost or repeated AREQ is harmless; the arbiter's demand is this
        // total minus what it granted (so ALLOCs in flight are not granted twice).
        header.areqs.push_back (FastpassAreqEntry{
            dst, destination.received + NeededFor (destination) - destination.pending,
            destination.received, ShortestUncovered (destination).second});
    }
    nEntries = static_cast<uint32_t> (header.areqs.size ());
    header.value1 = nEntries;
    Ptr<Packet> packet = Create<Packet> ();
    packet->AddHeader (header);
    frame.srcHost = GetHostIndex ();
    frame.dstHost = m_config.arbiter;
    frame.protocol = kFastpassProtocol;
    frame.flowHash = GetHostIndex (); // one path: AREQs arrive in order
    return packet;
}

void
FastpassHost::MarkDirty (uint16_t dst)
{
    m_dirty.insert (dst);
    if (!m_areqEvent.IsRunning ())
    {
        // After every event of this instant: flows starting together share one AREQ.
        m_areqEvent = Simulator::ScheduleNow (&FastpassHost::TrySendControl, this);
    }
}

void
FastpassHost::RetryControlAt (Time at)
{
    const Time now = Simulator::Now ();
    if (!m_controlEvent.IsRunning () || Simulator::GetDelayLeft (m_controlEvent) > at - now)
    {
        m_controlEvent.Cancel ();
        m_controlEvent = Simulator::Schedule (at - now, &FastpassHost::TrySendControl, this);
    }
}

void
FastpassHost::TrySendControl ()
{
    const Time now = Simulator::Now ();
    while (true)
    {
        // FCP's AREQ goes first (it gates every new flow of the host), at most one per
        // requestGap; the other control frames do not wait for that gap.
        const bool areq = !m_dirty.empty () && now >= m_nextAreq;
        if (!areq && m_control.empty ())
        {
            if (!m_dirty.empty ())
            {
                RetryControlAt (m_nextAreq);
            }
            return;
        }
        auto next = m_dataTimes.lower_bound (now.GetPicoSeconds ());
        FabricHeader areqFrame;
        uint32_t nEntries = 0;
        uint32_t maxEntries = kFastpassMaxAreqPerFrame;
        if (areq && next != m_dataTimes.end ())
        {
            // As many destinations as fit before the next data timeslot (at least one).
            const uint32_t wire = kFastpassHeaderBytes + kFabricHeaderBytes;
            uint32_t fit = 1;
            while (fit < maxEntries &&
                   now + GetDevice ()->TxTime (wire + (fit + 1) * kFastpassAreqEntryBytes) <=
                       PicoSeconds (*next))
            {
                ++fit;
            }
            maxEntries = fit;
        }
        Ptr<Packet> packet =
            areq ? BuildAreq (areqFrame, maxEntries, nEntries) : m_control.front ().first;
        const FabricHeader& frame = areq ? areqFrame : m_control.front ().second;
        const Time end = now + GetDevice ()->TxTime (packet->GetSize () + kFabricHeaderBytes);
        const bool busy = m_nicFreeAt > now;
        if (busy || (next != m_dataTimes.end () && end.GetPicoSeconds () > *next))
        {
            // One control frame at a time, on an idle NIC (so an ALLOC arriving now finds at
            // most one ahead of its first packet), ending before the next timeslot: retry
            // when the NIC frees or after that timeslot's packet.
            RetryControlAt (busy ? m_nicFreeAt : PicoSeconds (*next));
            return;
        }
        Transmit (packet, frame);
        if (areq)
        {
            ++m_requestFrames;
            m_nextAreq = now + m_config.requestGap;
            for (uint32_t i = 0; i < nEntries; ++i)
            {
                Destination& destination = m_destinations[*m_dirty.begin ()];
                destination.hintFlow = ShortestUncovered (destination).first;
                m_dirty.erase (m_dirty.begin ());
            }
        }
        else
        {
            m_control.pop_front ();
        }
    }
}

void
FastpassHost::Request (uint64_t flowId, const Sender& sender)
{
    if (m_config.perDestination)
    {
        MarkDirty (sender.dst);
        return;
    }
    ++m_requestFrames;
    FastpassHeader header;
    header.type = FastpassHeader::REQUEST;
    header.value0 = (static_cast<uint32_t> (GetHostIndex ()) << 16) | sender.dst;
    header.value1 = sender.sent + static_cast<uint32_t> (sender.retransmit.size ()) +
                    (sender.nPackets - sender.nextNew);
    header.slot = sender.granted;
    SendControl (m_config.arbiter, header, flowId);
}

void
FastpassHost::Withdraw (uint64_t flowId, const Sender& sender)
{
    FastpassHeader header;
    header.type = FastpassHeader::REQUEST;
    header.value0 = (static_cast<uint32_t> (GetHostIndex ()) << 16) | sender.dst;
    header.value1 = 0;
    ++m_requestFrames;
    SendControl (m_config.arbiter, header, flowId);
}

void
FastpassHost::StartSender (uint64_t flowId, uint16_t dst, uint64_t sizeBytes)
{
    Sender sender;
    sender.dst = dst;
    sender.sizeBytes = sizeBytes;
    sender.nPackets =
        static_cast<uint32_t> ((sizeBytes + m_config.mssBytes - 1) / m_config.mssBytes);
    sender.deadline = Simulator::Now () + m_config.retransmitTimeout;
    auto it = m_senders.emplace (flowId, sender).first;
    if (m_config.perDestination)
    {
        m_destinations[dst].flows.insert (flowId);
    }
    Request (flowId, it->second);
    ArmTimer ();
}

void
FastpassHost::StartReceiver (uint64_t flowId, uint16_t src, uint64_t sizeBytes)
{
    Receiver receiver;
    receiver.src = src;
    receiver.nPackets =
        static_cast<uint32_t> ((sizeBytes + m_config.mssBytes - 1) / m_config.mssBytes);
    receiver.got.assign (receiver.nPackets, false);
    m_receivers.emplace (flowId, std::move (receiver));
}

Time
FastpassHost::AllocatedSendTime (uint64_t slot, uint32_t slotOffset, Time now)
{
    Time at = m_config.sendOnArrival
                  ? now + m_config.timeslot * static_cast<int64_t> (slotOffset)
                  : PicoSeconds (static_cast<int64_t> (slot) * m_config.timeslot.GetPicoSeconds ());
    if (at < now)
    {
        ++m_lateAllocations;
        at = now;
    }
    m_dataTimes.insert (at.GetPicoSeconds ());
    return at;
}

void
FastpassHost::SendData (uint64_t flowId, uint64_t slot, uint16_t spine)
{
    auto timeIt = m_dataTimes.find (Simulator::Now ().GetPicoSeconds ());
    if (timeIt != m_dataTimes.end ())
    {
        m_dataTimes.erase (timeIt);
    }
    auto it = m_senders.find (flowId);
    if (it == m_senders.end ())
    {
        ++m_unusedSlots;
        return;
    }
    Sender& sender = it->second;
    if (sender.pendingSlots > 0)
    {
        --sender.pendingSlots;
    }
    SendPacket (flowId, sender, slot, spine);
}

void
FastpassHost::SendDataTo (uint16_t dst, uint64_t slot, uint16_t spine)
{
    auto timeIt = m_dataTimes.find (Simulator::Now ().GetPicoSeconds ());
    if (timeIt != m_dataTimes.end ())
    {
        m_dataTimes.erase (timeIt);
    }
    Destination& destination = m_destinations[dst];
    if (destination.pending > 0)
    {
        --destination.pending;
    }
    uint64_t chosen = 0;
    Sender* best = nullptr;
    uint32_t bestLeft = UINT32_MAX;
    for (uint64_t flowId : destination.flows)
    {
        Sender& sender = m_senders.at (flowId);
        if (!sender.retransmit.empty ())
        {
            chosen = flowId;
            best = &sender;
            break;
        }
        const uint32_t left = sender.nPackets - sender.nextNew;
        if (left > 0 && left < bestLeft)
        {
            chosen = flowId;
            best = &sender;
            bestLeft = left;
        }
    }
    if (best == nullptr)
    {
        ++m_unusedSlots;
        return;
    }
    SendPacket (chosen, *best, slot, spine);
}

void
FastpassHost::SendPacket (uint64_t flowId, Sender& sender, uint64_t slot, uint16_t spine)
{
    uint32_t index;
    if (!sender.retransmit.empty ())
    {
        index = sender.retransmit.front ();
        sender.retransmit.pop_front ();
        ++m_retransmissions;
    }
    else if (sender.nextNew < sender.nPackets)
    {
        index = sender.nextNew++;
    }
    else
    {
        ++m_unusedSlots;
        return;
    }
    const uint64_t offset = static_cast<uint64_t> (index) * m_config.mssBytes;
    const uint32_t payload =
        static_cast<uint32_t> (std::min<uint64_t> (m_config.mssBytes, sender.sizeBytes - offset));
    FastpassHeader header;
    header.type = FastpassHeader::DATA;
    header.flowId = flowId;
    header.value0 = index;
    header.slot = slot;
    Ptr<Packet> packet = Create<Packet> (payload);
    packet->AddHeader (header);
    FabricHeader frame;
    frame.srcHost = GetHostIndex ();
    frame.dstHost = sender.dst;
    frame.protocol = kFastpassProtocol;
    frame.flowHash = static_cast<uint32_t> (flowId * 0x9E3779B97F4A7C15ULL >> 32);
    frame.payloadBytes = payload;
    frame.pinnedUplink = m_config.spray ? static_cast<uint16_t> (m_sprayCounter++ % 4096) : spine;
    ++m_dataPacketsSent;
    ++sender.sent;
    sender.deadline = Simulator::Now () + m_config.retransmitTimeout;
    sender.backoff = 1;
    Transmit (packet, frame);
    if (!m_control.empty () || !m_dirty.empty ())
    {
        TrySendControl ();
    }
}

void
FastpassHost::ArmTimer ()
{
    if (!m_timer.IsRunning ())
    {
        m_timer = Simulator::Schedule (m_config.retransmitTimeout, &FastpassHost::OnTimer, this);
    }
}

void
FastpassHost::OnTimer ()
{
    const Time now = Simulator::Now ();
    Time next = Time::Max ();
    std::vector<uint64_t> due;
    for (auto& [flowId, sender] : m_senders)
    {
        if (sender.deadline <= now)
        {
            due.push_back (flowId);
            sender.deadline = now + m_config.retransmitTimeout * sender.backoff;
            sender.backoff = std::min<uint32_t> (2 * sender.backoff, 64);
        }
        next = std::min (next, sender.deadline);
    }
    std::sort (due.begin (), due.end ()); // deterministic order
    std::set<uint16_t> decided;           // FCP: destinations looked at in this pass
    for (uint64_t flowId : due)
    {
        Sender& sender = m_senders[flowId];
        const uint32_t wanted =
            static_cast<uint32_t> (sender.retransmit.size ()) + (sender.nPackets - sender.nextNew);
        if (m_config.perDestination && wanted > 0)
        {
            Destination& destination = m_destinations[sender.dst];
            if (decided.insert (sender.dst).second && NeededFor (destination) > destination.pending)
            {
                // The destination wants timeslots beyond the allocated ones: repeat its
                // demand, once for all its flows, which then wait (backing off per
                // destination) before repeating it again.
                ++m_repeatedRequests;
                Request (flowId, sender);
                const Time wait = m_config.retransmitTimeout * destination.backoff;
                destination.backoff = std::min<uint32_t> (2 * destination.backoff, 64);
                for (uint64_t other : destination.flows)
                {
                    Sender& peer = m_senders.at (other);
                    if (peer.deadline > now)
                    {
                        peer.deadline = std::max (peer.deadline, now + wait);
                    }
                    next = std::min (next, peer.deadline);
                }
                sender.deadline = now + wait;
            }
            next = std::min (next, sender.deadline);
            continue;
        }
        if (wanted > sender.pendingSlots)
        {
            // Timeslots still to get beyond the allocated ones: repeat the demand.
            ++m_repeatedRequests;
            Request (flowId, sender);
            continue;
        }
        if (wanted > 0)
        {
            continue; // allocated, waiting for its timeslots
        }
        ++m_probes;
        sender.sentAtProbe = sender.nextNew;
        FastpassHeader header;
        header.type = FastpassHeader::PROBE;
        SendControl (sender.dst, header, flowId);
    }
    if (next != Time::Max ())
    {
        m_timer = Simulator::Schedule (next - now, &FastpassHost::OnTimer, this);
    }
}

void
FastpassHost::DoReceive (Ptr<Packet> packet, const FabricHeader& frame, Time /* now */)
{
    FastpassHeader header;
    packet->RemoveHeader (header);
    switch (header.type)
    {
        case FastpassHeader::DST_ALLOC:
        {
            const Time now = Simulator::Now ();
            std::set<uint16_t> named;
            Time lastAt = now;
            for (const FastpassAllocEntry& entry : header.allocs)
            {
                const uint64_t slot = header.slot + entry.slotOffset;
                const auto dst = static_cast<uint16_t> (entry.flowId);
                const Time at = AllocatedSendTime (slot, entry.slotOffset, now);
                lastAt = std::max (lastAt, at);
                Simulator::Schedule (at - now, &FastpassHost::SendDataTo, this, dst, slot,
                                     entry.spine);
                Destination& destination = m_destinations[dst];
                ++destination.received;
                ++destination.pending;
                named.insert (dst);
            }
            for (uint16_t dst : named)
            {
                m_destinations[dst].backoff = 1;
                // The allocated timeslots cover the flow the arbiter ranks the destination
                // by: tell it the next one (its size sets the min-FCT order).
                const uint64_t next = ShortestUncovered (m_destinations[dst]).first;
                if (next != UINT64_MAX && next != m_destinations[dst].hintFlow)
                {
                    MarkDirty (dst);
                }
                for (uint64_t flowId : m_destinations[dst].flows)
                {
                    Sender& sender = m_senders.at (flowId);
                    sender.deadline = lastAt + m_config.retransmitTimeout;
                    sender.backoff = 1;
                }
            }
            break;
        }
        case FastpassHeader::ALLOC:
        {
            const Time now = Simulator::Now ();
            for (const FastpassAllocEntry& entry : header.allocs)
            {
                const uint64_t slot = header.slot + entry.slotOffset;
                const Time at = AllocatedSendTime (slot, entry.slotOffset, now);
                Simulator::Schedule (at - now, &FastpassHost::SendData, this, entry.flowId, slot,
                                     entry.spine);
                auto sender = m_senders.find (entry.flowId);
                if (sender != m_senders.end ())
                {
                    sender->second.deadline = at + m_config.retransmitTimeout;
                    sender->second.backoff = 1;
                    ++sender->second.pendingSlots;
                    ++sender->second.granted;
                }
            }
            break;
        }
        case FastpassHeader::DATA:
        {
            auto it = m_receivers.find (header.flowId);
            if (it == m_receivers.end ())
            {
                FastpassHeader done; // finished already: repeat DONE
                done.type = FastpassHeader::DONE;
                SendControl (frame.srcHost, done, header.flowId);
                break;
            }
            Receiver& receiver = it->second;
            NS_ABORT_MSG_IF (header.value0 >= receiver.nPackets,
                             "FastpassHost: packet " << header.value0 << " of flow "
                                                     << header.flowId << " out of range");
            if (!receiver.got[header.value0])
            {
                receiver.got[header.value0] = true;
                if (++receiver.received == receiver.nPackets)
                {
                    const uint16_t src = receiver.src;
                    m_receivers.erase (it);
                    FastpassHeader done;
                    done.type = FastpassHeader::DONE;
                    SendControl (src, done, header.flowId);
                    if (!m_received.IsNull ())
                    {
                        m_received (header.flowId);
                    }
                }
            }
            break;
        }
        case FastpassHeader::PROBE:
        {
            auto it = m_receivers.find (header.flowId);
            FastpassHeader reply;
            if (it == m_receivers.end ())
            {
                reply.type = FastpassHeader::DONE;
            }
            else
            {
                reply.type = FastpassHeader::MISSING;
                for (uint32_t i = 0;
                     i < it->second.nPackets && reply.missing.size () < kFastpassMaxMissingPerReply;
                     ++i)
                {
                    if (!it->second.got[i])
                    {
                        reply.missing.push_back (i);
                    }
                }
                reply.value1 = static_cast<uint32_t> (reply.missing.size ());
            }
            SendControl (frame.srcHost, reply, header.flowId);
            break;
        }
        case FastpassHeader::MISSING:
        {
            auto it = m_senders.find (header.flowId);
            if (it == m_senders.end ())
            {
                break;
            }
            Sender& sender = it->second;
            // Only packets sent before the PROBE (retransmitTimeout before it: they had time to
            // arrive) are lost; later ones may be on their way, unsent ones are not lost.
            sender.retransmit.clear ();
            for (uint32_t index : header.missing)
            {
                if (index < sender.sentAtProbe)
                {
                    sender.retransmit.push_back (index);
                }
            }
            if (sender.retransmit.empty ())
            {
                break; // nothing lost: the arbiter still holds the demand of the unsent packets
            }
            sender.reRequested = true;
            Request (header.flowId, sender);
            break;
        }
        case FastpassHeader::DONE:
        {
            auto it = m_senders.find (header.flowId);
            if (it == m_senders.end ())
            {
                break;
            }
            const bool leftover =
                it->second.reRequested || it->second.nextNew < it->second.nPackets;
            if (m_config.perDestination)
            {
                const uint16_t dst = it->second.dst;
                m_destinations[dst].flows.erase (header.flowId);
                m_senders.erase (it);
                if (leftover)
                {
                    MarkDirty (dst); // the lower total withdraws what is left at the arbiter
                }
            }
            else
            {
                if (leftover)
                {
                    Withdraw (header.flowId, it->second); // what is left at the arbiter
                }
                m_senders.erase (it);
            }
            if (!m_senderDone.IsNull ())
            {
                m_senderDone (header.flowId);
            }
            break;
        }
        default:
            NS_LOG_WARN ("host " << GetHostIndex () << ": unexpected Fastpass frame type "
                                 << static_cast<uint32_t> (header.type));
    }
}

} // namespace ns3
