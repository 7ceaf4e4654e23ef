/*
 * disaggsim: the RoCE NIC of one host.
 */
#include "roce-host.h"

#include "roce-header.h"
#include "roce-receiver.h"
#include "roce-sender.h"

#include "topologies/model/int-tag.h"
#include "topologies/model/pooled-event.h"

#include "ns3/log.h"
#include "ns3/simulator.h"

#include <algorithm>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE ("RoceHost");
NS_OBJECT_ENSURE_REGISTERED (RoceHost);

TypeId
RoceHost::GetTypeId ()
{
    static TypeId tid = TypeId ("ns3::RoceHost")
                            .SetParent<FabricHost> ()
                            .SetGroupName ("Disaggsim")
                            .AddConstructor<RoceHost> ();
    return tid;
}

RoceHost::RoceHost () = default;

RoceHost::~RoceHost () = default;

void
RoceHost::DoDispose ()
{
    m_wakeAt = Time::Max ();
    if (m_nicQueue)
    {
        m_nicQueue->SetDequeueListener (nullptr);
    }
    m_nicQueue = nullptr;
    m_active.clear ();
    m_senders.clear ();
    m_receivers.clear ();
    m_framePackets.clear ();
    FabricHost::DoDispose ();
}

void
RoceHost::Setup (Ptr<FabricNetDevice> device, uint16_t hostIndex)
{
    FabricHost::Setup (device, hostIndex, kRoceProtocol);
}

void
RoceHost::DoSetup ()
{
    m_nicQueue = GetDevice ()->GetQueue ();
    m_nicQueue->SetDequeueListener (this);
}

void
RoceHost::AddSender (uint64_t flowId, Ptr<RoceSender> sender)
{
    m_senders[flowId] = sender;
}

void
RoceHost::AddReceiver (uint64_t flowId, Ptr<RoceReceiver> receiver)
{
    m_receivers[flowId] = receiver;
}

void
RoceHost::RemoveSender (uint64_t flowId)
{
    auto it = m_senders.find (flowId);
    if (it == m_senders.end ())
    {
        return;
    }
    auto pos = std::find (m_active.begin (), m_active.end (), it->second);
    if (pos != m_active.end ())
    {
        const size_t index = pos - m_active.begin ();
        (*pos)->SetScheduled (false);
        m_active.erase (pos);
        if (m_next > index)
        {
            --m_next;
        }
    }
    m_senders.erase (it);
}

void
RoceHost::RemoveReceiver (uint64_t flowId)
{
    m_receivers.erase (flowId);
}

void
RoceHost::SendFrame (Ptr<Packet> packet, const FabricHeader& frame, Time now)
{
    Send (std::move (packet), frame, now);
}

Ptr<Packet>
RoceHost::FramePacket (uint32_t bytes)
{
    if (bytes >= m_framePackets.size ())
    {
        m_framePackets.resize (bytes + 1);
    }
    Ptr<Packet>& packet = m_framePackets[bytes];
    if (!packet)
    {
        packet = Create<Packet> (bytes);
    }
    return packet;
}

void
RoceHost::Activate (RoceSender* sender)
{
    if (!sender->IsScheduled ())
    {
        sender->SetScheduled (true);
        m_active.push_back (sender);
    }
    if (!m_scheduling)
    {
        Schedule ();
    }
}

void
RoceHost::NotifyDequeue (const FabricQueueItem& item, uint32_t bytesBefore)
{
    if ((item.header.transportFlags & ROCE_DATA) != 0)
    {
        m_dataWaiting = false; // the port took the data frame that waited
    }
    if (m_waitDequeue && !m_dataWaiting)
    {
        m_waitDequeue = false;
        const Time now = Simulator::Now ();
        // The port just took its waiting frame and will put it on the wire right after this
        // trace: the next eligible QP's frame goes straight into the port's queue, where the
        // port finds it when it checks for more (so it follows back to back, and no event is
        // needed).  Not through the port's EnqueueFrame: the port is between its dequeue
        // and that frame's transmission, and an idle-looking port would send at once.
        RoceSender* qp = NextEligible (now);
        if (qp == nullptr)
        {
            ArmWake (now, now); // rate-paced QPs: Schedule finds their next time
            return;
        }
        Ptr<Packet> packet;
        FabricHeader frame;
        qp->BuildNext (now, packet, frame);
        FabricQueueItem next{packet, frame, GetDevice ()->HostFrameNotBefore (now),
                             kFabricNoIngressPort};
        if (m_nicQueue->Enqueue (std::move (next), now))
        {
            m_waitDequeue = true; // that frame waits at the port now
            m_dataWaiting = true;
            return;
        }
        CountNicDrop ();
        ArmWake (now, now); // nothing waits at the port: the scheduler goes on at once
    }
}

RoceSender*
RoceHost::NextEligible (Time now)
{
    const size_t n = m_active.size ();
    for (size_t k = 0, i = n == 0 ? 0 : m_next % n; k < n; ++k, i = i + 1 == n ? 0 : i + 1)
    {
        RoceSender* qp = PeekPointer (m_active[i]);
        if (qp->IsEligible (now))
        {
            m_next = i + 1 == n ? 0 : i + 1;
            return qp;
        }
    }
    return nullptr;
}

void
RoceHost::ArmWake (Time at, Time now)
{
    if (at >= m_wakeAt)
    {
        return; // an earlier (or the same) wake is pending
    }
    m_wakeAt = at;
    Simulator::ScheduleWithContext (
        GetDevice ()->GetNodeId (), at - now,
        new PooledTimedEvent<RoceHost, &RoceHost::WakeAt> (this, at));
}

void
RoceHost::WakeAt (Time at)
{
    if (at != m_wakeAt)
    {
        return; // superseded by an earlier wake
    }
    m_wakeAt = Time::Max ();
    Schedule ();
}

void
RoceHost::Schedule ()
{
    const Time now = Simulator::Now ();
    m_scheduling = true;
    Time earliest = Time::Max ();
    while (!m_active.empty ())
    {
        if (!m_nicQueue->IsEmpty ())
        {
            m_waitDequeue = true; // one frame waits at the port already
            earliest = Time::Max ();
            break;
        }
        // Round robin from m_next: the first eligible QP sends one packet.
        bool sent = false;
        earliest = Time::Max ();
        // Round robin, one division per pass instead of one per step: i = (m_next + k) mod n.
        const size_t n = m_active.size ();
        for (size_t k = 0, i = n == 0 ? 0 : m_next % n; k < n; ++k, i = i + 1 == n ? 0 : i + 1)
        {
            RoceSender* qp = PeekPointer (m_active[i]);
            if (!qp->HasWindow ())
            {
                continue;
            }
            if (qp->GetNextAvail () > now)
            {
                earliest = std::min (earliest, qp->GetNextAvail ());
                continue;
            }
            qp->SendNext (now);
            // The port was empty: the frame either left at once or waits there alone.
            m_dataWaiting = !m_nicQueue->IsEmpty ();
            m_next = i + 1 == n ? 0 : i + 1;
            sent = true;
            break;
        }
        if (!sent)
        {
            break;
        }
    }
    // QPs with nothing to send (window closed, all sent) leave the list; ACKs re-activate.
    m_active.erase (std::remove_if (m_active.begin (), m_active.end (),
                                    [] (const Ptr<RoceSender>& qp) {
                                        const bool idle = !qp->HasWindow ();
                                        if (idle)
                                        {
                                            qp->SetScheduled (false);
                                        }
                                        return idle;
                                    }),
                    m_active.end ());
    if (m_next >= m_active.size ())
    {
        m_next = 0;
    }
    m_scheduling = false;
    if (earliest != Time::Max () && !m_waitDequeue)
    {
        ArmWake (earliest, now);
    }
}

void
RoceHost::DoReceive (Ptr<Packet> /* packet: a FramePacket placeholder */,
                     const FabricHeader& frame, Time now)
{
    const uint8_t flags = frame.transportFlags;
    if (flags & ROCE_DATA)
    {
        auto it = m_receivers.find (frame.flowId);
        if (it == m_receivers.end ())
        {
            NS_LOG_WARN ("host " << GetHostIndex () << ": data of unknown flow " << frame.flowId);
            return;
        }
        it->second->ReceiveData (frame.seq, frame.payloadBytes, frame.ecn == FabricEcn::CE,
                                 IntFrameKey (frame), now);
        return;
    }
    auto it = m_senders.find (frame.flowId);
    if (it == m_senders.end ())
    {
        return; // a late ACK of a released flow
    }
    if (flags & (ROCE_ACK | ROCE_NACK))
    {
        const bool nack = (flags & ROCE_NACK) != 0;
        if (IntRecords::GetSize () == 0)
        {
            // No frame holds INT records (no HPCC QP): no 176 B IntTag to build, no lookup.
            it->second->ReceiveAck (frame.seq, nack, nullptr, now);
            return;
        }
        // The echoed records are read in place (HPCC's OnAck, before anything can stamp or
        // put records) and then forgotten: no 176 B copy per ACK.
        const uint32_t key = IntFrameKey (frame);
        const IntTag* records = key != 0 ? &IntRecords::At (key) : nullptr;
        it->second->ReceiveAck (frame.seq, nack, records, now);
        if (key != 0)
        {
            IntRecords::Close (key);
        }
    }
    else if (flags & ROCE_CNP)
    {
        it->second->ReceiveCnp (now);
    }
    else if (flags & ROCE_READ_REQUEST)
    {
        it->second->Start ();
    }
}

} // namespace ns3
