/*
 * disaggsim: egress queue of a fabric port (base class).
 */
#include "fabric-queue.h"

#include "fabric-shared-buffer.h"

#include "ns3/assert.h"
#include "ns3/log.h"
#include "ns3/simulator.h"
#include "ns3/trace-source-accessor.h"
#include "ns3/uinteger.h"

namespace ns3
{

NS_LOG_COMPONENT_DEFINE ("FabricQueue");
NS_OBJECT_ENSURE_REGISTERED (FabricQueue);

TypeId
FabricQueue::GetTypeId ()
{
    static TypeId tid =
        TypeId ("ns3::FabricQueue")
            .SetParent<Object> ()
            .SetGroupName ("Disaggsim")
            .AddAttribute ("MaxBytes",
                           "Capacity in wire bytes (packet + 18 B frame header); 0 = unlimited. "
                           "Switch ports get the topology's BufferBytes (36 KB per port, "
                           "Gao et al. OSDI'16 §4.2).",
                           UintegerValue (0), MakeUintegerAccessor (&FabricQueue::m_maxBytes),
                           MakeUintegerChecker<uint32_t> ())
            .AddTraceSource ("BytesInQueue", "Occupancy in wire bytes",
                             MakeTraceSourceAccessor (&FabricQueue::m_bytesInQueue),
                             "ns3::TracedValueCallback::Uint32")
            .AddTraceSource ("Enqueue", "A frame was accepted (occupancy before it)",
                             MakeTraceSourceAccessor (&FabricQueue::m_enqueueTrace),
                             "ns3::FabricQueue::ItemTracedCallback")
            .AddTraceSource ("Dequeue", "A frame left for transmission (occupancy before it)",
                             MakeTraceSourceAccessor (&FabricQueue::m_dequeueTrace),
                             "ns3::FabricQueue::ItemTracedCallback")
            .AddTraceSource (
                "Drop",
                "A frame was dropped: an arriving frame that did not fit, or a buffered "
                "frame the discipline evicted or dropped (occupancy before the drop)",
                MakeTraceSourceAccessor (&FabricQueue::m_dropTrace),
                "ns3::FabricQueue::ItemTracedCallback")
            .AddTraceSource ("Mark",
                             "A frame was CE-marked (occupancy at its arrival; with a "
                             "SwitchMmu's EcnAtDequeue, before its departure)",
                             MakeTraceSourceAccessor (&FabricQueue::m_markTrace),
                             "ns3::FabricQueue::ItemTracedCallback");
    return tid;
}

FabricQueue::FabricQueue () = default;

FabricQueue::~FabricQueue () = default;

void
FabricQueue::AccumulateOccupancy (Time now)
{
    // Integral of occupancy over time in byte x time steps (converted to seconds on read).
    m_byteSteps +=
        static_cast<double> (m_nBytes) * static_cast<double> ((now - m_lastChange).GetTimeStep ());
    m_lastChange = now;
}

bool
FabricQueue::Enqueue (FabricQueueItem&& item)
{
    return Enqueue (std::move (item), Simulator::Now ());
}

bool
FabricQueue::Enqueue (FabricQueueItem&& item, Time now)
{
    uint32_t wireBytes = item.GetWireBytes ();
    if (m_maxBytes != 0 && m_nBytes + wireBytes > m_maxBytes)
    {
        // Full: the discipline may name buffered frames to drop instead of the arrival.
        FabricQueueItem victim;
        do
        {
            if (m_nPackets == 0 || !DoSelectVictim (item, victim))
            {
                NS_LOG_LOGIC ("drop " << item.header << " occupancy " << m_nBytes);
                ++m_droppedPackets;
                m_dropTrace (item, m_nBytes);
                return false;
            }
            NS_LOG_LOGIC ("evict " << victim.header << " for " << item.header);
            DropBufferedAt (victim, now);
        } while (m_nBytes + wireBytes > m_maxBytes);
    }
    uint32_t bytesBefore = m_nBytes;
    const uint32_t ingressPort = item.ingressPort;
    const uint8_t trafficClass = item.header.trafficClass;
    if (m_sharedBuffer != nullptr)
    {
        // The switch's shared buffer must hold the frame too (it may CE-mark it).
        const FabricEcn ecnBefore = item.header.ecn;
        if (!m_sharedBuffer->Admit (item, *this))
        {
            NS_LOG_LOGIC ("drop " << item.header << ": shared buffer full");
            ++m_droppedPackets;
            m_dropTrace (item, m_nBytes);
            return false;
        }
        if (item.header.ecn != ecnBefore)
        {
            NotifyMarked (item, bytesBefore);
        }
    }
    if (!m_enqueueTrace.IsEmpty ())
    {
        m_enqueueTrace (item, bytesBefore);
    }
    if (!DoEnqueue (std::move (item)))
    {
        ++m_droppedPackets;
        if (m_sharedBuffer != nullptr)
        {
            m_sharedBuffer->Release (ingressPort, trafficClass, wireBytes);
        }
        return false;
    }
    AccumulateOccupancy (now);
    m_nBytes += wireBytes;
    ++m_nPackets;
    ++m_enqueuedPackets;
    if (m_nBytes > m_peakBytes)
    {
        m_peakBytes = m_nBytes;
    }
    m_bytesInQueue = m_nBytes;
    return true;
}

bool
FabricQueue::DropIfRefused (const FabricHeader& header, uint32_t wireBytes)
{
    if (m_maxBytes == 0 || m_nBytes + wireBytes <= m_maxBytes || !m_dropTrace.IsEmpty () ||
        m_sharedBuffer != nullptr || (m_nPackets != 0 && !DoRefusesArrival (header)))
    {
        return false;
    }
    // Enqueue's outright drop of an arrival: the counter, and the trace, which has no sink.
    ++m_droppedPackets;
    return true;
}

bool
FabricQueue::DoRefusesArrival (const FabricHeader& arriving) const
{
    return true;
}

bool
FabricQueue::PassesLoneFrame () const
{
    return false;
}

bool
FabricQueue::PassThrough (const FabricQueueItem& item)
{
    const uint32_t wireBytes = item.GetWireBytes ();
    if (m_nPackets != 0 || (m_maxBytes != 0 && wireBytes > m_maxBytes) ||
        m_sharedBuffer != nullptr || !PassesLoneFrame ())
    {
        return false;
    }
    // Enqueue's and Dequeue's effects with an empty queue: the occupancy was 0 until now and
    // is 0 again now, so the time integral gains nothing.
    if (!m_enqueueTrace.IsEmpty ())
    {
        m_enqueueTrace (item, 0);
    }
    ++m_enqueuedPackets;
    if (wireBytes > m_peakBytes)
    {
        m_peakBytes = wireBytes;
    }
    m_bytesInQueue = wireBytes;
    m_bytesInQueue = 0;
    if (m_dequeueListener != nullptr)
    {
        m_dequeueListener->NotifyDequeue (item, wireBytes);
    }
    if (!m_dequeueTrace.IsEmpty ())
    {
        m_dequeueTrace (item, wireBytes);
    }
    return true;
}

bool
FabricQueue::DoSelectVictim (const FabricQueueItem& /* arriving */, FabricQueueItem& /* victim */)
{
    return false;
}

void
FabricQueue::DropBuffered (const FabricQueueItem& item)
{
    DropBufferedAt (item, Simulator::Now ());
}

void
FabricQueue::DropBufferedAt (const FabricQueueItem& item, Time now)
{
    NS_ASSERT_MSG (m_nPackets > 0 && m_nBytes >= item.GetWireBytes (),
                   "FabricQueue::DropBuffered: frame " << item.header << " is not buffered");
    AccumulateOccupancy (now);
    uint32_t bytesBefore = m_nBytes;
    m_nBytes -= item.GetWireBytes ();
    --m_nPackets;
    ++m_droppedPackets;
    m_bytesInQueue = m_nBytes;
    if (m_sharedBuffer != nullptr)
    {
        m_sharedBuffer->Release (item.ingressPort, item.header.trafficClass, item.GetWireBytes ());
    }
    m_dropTrace (item, bytesBefore);
}

bool
FabricQueue::Dequeue (FabricQueueItem& item)
{
    return Dequeue (item, Simulator::Now ());
}

bool
FabricQueue::DequeueUnpaused (FabricQueueItem& item, Time now, uint8_t pausedClasses)
{
    if (m_nPackets == 0)
    {
        return false;
    }
    if (pausedClasses == 0)
    {
        item = DoDequeue (now);
    }
    else if (!DoDequeueUnpaused (now, pausedClasses, item))
    {
        return false;
    }
    AccumulateOccupancy (now);
    uint32_t bytesBefore = m_nBytes;
    m_nBytes -= item.GetWireBytes ();
    --m_nPackets;
    m_bytesInQueue = m_nBytes;
    if (m_sharedBuffer != nullptr)
    {
        m_sharedBuffer->Release (item.ingressPort, item.header.trafficClass, item.GetWireBytes ());
        if (m_sharedBuffer->MarksOnDequeue ())
        {
            const FabricEcn ecnBefore = item.header.ecn;
            m_sharedBuffer->OnDequeue (item, *this);
            if (item.header.ecn != ecnBefore)
            {
                NotifyMarked (item, bytesBefore);
            }
        }
    }
    if (m_dequeueListener != nullptr)
    {
        m_dequeueListener->NotifyDequeue (item, bytesBefore);
    }
    if (!m_dequeueTrace.IsEmpty ())
    {
        m_dequeueTrace (item, bytesBefore);
    }
    return true;
}

bool
FabricQueue::DoDequeueUnpaused (Time /* now */, uint8_t /* pausedClasses */,
                                FabricQueueItem& /* item */)
{
    return false; // class-blind: one order for every class, so a paused class stops the port
}

void
FabricQueue::NotifyMarked (const FabricQueueItem& item, uint32_t bytesBefore)
{
    ++m_markedPackets;
    m_markTrace (item, bytesBefore);
}

double
FabricQueue::GetMeanBytes () const
{
    Time now = Simulator::Now ();
    if (now <= m_statsStart)
    {
        return m_nBytes;
    }
    double byteSteps = m_byteSteps + static_cast<double> (m_nBytes) *
                                         static_cast<double> ((now - m_lastChange).GetTimeStep ());
    return byteSteps / static_cast<double> ((now - m_statsStart).GetTimeStep ());
}

void
FabricQueue::ResetStatistics ()
{
    m_statsStart = Simulator::Now ();
    m_lastChange = m_statsStart;
    m_byteSteps = 0;
    m_peakBytes = m_nBytes;
    m_droppedPackets = 0;
    m_markedPackets = 0;
    m_enqueuedPackets = 0;
}

} // namespace ns3
