/*
 * disaggsim: pFabric switch port: priority scheduling and priority dropping.
 */
#include "pfabric-queue.h"

#include "ns3/log.h"
#include "ns3/simulator.h"
#include "ns3/trace-source-accessor.h"
#include "ns3/uinteger.h"

namespace ns3
{

NS_LOG_COMPONENT_DEFINE ("PfabricQueue");
NS_OBJECT_ENSURE_REGISTERED (PfabricQueue);

TypeId
PfabricQueue::GetTypeId ()
{
    static TypeId tid =
        TypeId ("ns3::PfabricQueue")
            .SetParent<FabricQueue> ()
            .SetGroupName ("Disaggsim")
            .AddConstructor<PfabricQueue> ()
            .AddAttribute ("BufferBytes",
                           "Capacity in wire bytes; 0 = take MaxBytes over at the first "
                           "enqueue.  36 KB per port: pFabric SIGCOMM'13 §5.1 (2 x BDP at "
                           "10 Gbps), Gao et al. OSDI'16 §4.2, YAPS queue_size 36864.",
                           UintegerValue (0), MakeUintegerAccessor (&PfabricQueue::m_bufferBytes),
                           MakeUintegerChecker<uint32_t> ())
            .AddTraceSource ("PriorityDrop",
                             "A frame was dropped by the pFabric rules: the arriving frame "
                             "or an evicted lower-priority frame (occupancy at the arrival)",
                             MakeTraceSourceAccessor (&PfabricQueue::m_priorityDropTrace),
                             "ns3::FabricQueue::ItemTracedCallback");
    return tid;
}

PfabricQueue::PfabricQueue ()
{
    m_items.reserve (32);
}

PfabricQueue::~PfabricQueue () = default;

std::size_t
PfabricQueue::WorstIndex () const
{
    std::size_t worst = 0;
    uint32_t worstRank = 0;
    for (std::size_t i = 0; i < m_items.size (); ++i)
    {
        if (m_items[i].header.rank >= worstRank)
        {
            worstRank = m_items[i].header.rank;
            worst = i;
        }
    }
    return worst;
}

bool
PfabricQueue::DoEnqueue (FabricQueueItem&& item)
{
    if (GetMaxBytes () != 0)
    {
        // Take the capacity over so that full-buffer arrivals reach the pFabric rules.
        if (m_bufferBytes == 0)
        {
            m_bufferBytes = GetMaxBytes ();
        }
        SetMaxBytes (0);
    }
    uint32_t wireBytes = item.GetWireBytes ();
    if (m_bufferBytes != 0)
    {
        uint32_t bytesAtArrival = GetNBytes ();
        while (GetNBytes () + wireBytes > m_bufferBytes)
        {
            if (m_items.empty () || item.header.rank >= m_items[WorstIndex ()].header.rank)
            {
                NS_LOG_LOGIC ("drop arriving " << item.header);
                ++m_priorityDrops;
                m_priorityDropTrace (item, bytesAtArrival);
                return false;
            }
            m_evictIndex = WorstIndex ();
            FabricQueueItem victim;
            Dequeue (victim); // re-enters DoDequeue, which takes m_evictIndex
            NS_LOG_LOGIC ("evict " << victim.header << " for " << item.header);
            ++m_priorityDrops;
            m_priorityDropTrace (victim, bytesAtArrival);
        }
    }
    m_items.push_back (std::move (item));
    return true;
}

FabricQueueItem
PfabricQueue::DoDequeue ()
{
    std::size_t index;
    if (m_evictIndex != kNone)
    {
        index = m_evictIndex;
        m_evictIndex = kNone;
    }
    else
    {
        // The most urgent frame that may start now (the earliest on ties).  A cut-through
        // port is handed frames whose tail is still arriving (notBefore > now, see
        // FabricSwitch::Forward); committing to one of those while another is ready would
        // idle the port, so they compete only when nothing is ready, and then the first to
        // become ready goes (ties: the most urgent).
        const Time now = Simulator::Now ();
        std::size_t best = kNone;
        for (std::size_t i = 0; i < m_items.size (); ++i)
        {
            if (m_items[i].notBefore <= now &&
                (best == kNone || m_items[i].header.rank < m_items[best].header.rank))
            {
                best = i;
            }
        }
        if (best == kNone)
        {
            best = 0;
            for (std::size_t i = 1; i < m_items.size (); ++i)
            {
                if (m_items[i].notBefore < m_items[best].notBefore ||
                    (m_items[i].notBefore == m_items[best].notBefore &&
                     m_items[i].header.rank < m_items[best].header.rank))
                {
                    best = i;
                }
            }
        }
        // ... names the flow whose earliest buffered frame goes first (SIGCOMM'13 §4.2).
        uint32_t flow = PfabricFlowKey (m_items[best].header.flowHash);
        uint16_t src = m_items[best].header.srcHost;
        index = best;
        for (std::size_t i = 0; i < best; ++i)
        {
            if (PfabricFlowKey (m_items[i].header.flowHash) == flow &&
                m_items[i].header.srcHost == src)
            {
                index = i;
                break;
            }
        }
    }
    FabricQueueItem item = std::move (m_items[index]);
    m_items.erase (m_items.begin () + static_cast<std::ptrdiff_t> (index));
    return item;
}

} // namespace ns3
