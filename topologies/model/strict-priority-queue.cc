/*
 * disaggsim: a port queue of up to 8 traffic classes served in strict priority.
 */
#include "strict-priority-queue.h"

#include "ns3/uinteger.h"

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED (StrictPriorityQueue);

TypeId
StrictPriorityQueue::GetTypeId ()
{
    static TypeId tid =
        TypeId ("ns3::StrictPriorityQueue")
            .SetParent<FabricQueue> ()
            .SetGroupName ("Disaggsim")
            .AddConstructor<StrictPriorityQueue> ()
            .AddAttribute ("Classes",
                           "Strict-priority queues (FabricHeader::trafficClass 0 = served "
                           "first; a class beyond the last goes to the last).  8 = one per "
                           "802.1p priority (IEEE 802.1Q §8.6.6); pHost sets its "
                           "PriorityLevels (pHost CoNEXT'15 §3.3)",
                           UintegerValue (kFabricTrafficClasses),
                           MakeUintegerAccessor (&StrictPriorityQueue::m_levels),
                           MakeUintegerChecker<uint32_t> (1, kFabricTrafficClasses));
    return tid;
}

StrictPriorityQueue::StrictPriorityQueue () = default;

StrictPriorityQueue::~StrictPriorityQueue () = default;

uint32_t
StrictPriorityQueue::GetNPacketsAt (uint32_t level) const
{
    return level < m_fifo.size () ? static_cast<uint32_t> (m_fifo[level].size ()) : 0;
}

bool
StrictPriorityQueue::PassesLoneFrame () const
{
    return true;
}

bool
StrictPriorityQueue::DoEnqueue (FabricQueueItem&& item)
{
    if (m_fifo.size () != m_levels)
    {
        m_fifo.resize (m_levels);
    }
    const uint32_t cls = item.header.trafficClass;
    const uint32_t level = cls < m_levels ? cls : m_levels - 1;
    m_fifo[level].push_back (std::move (item));
    return true;
}

void
StrictPriorityQueue::Fifo::push_back (FabricQueueItem&& item)
{
    if (m_size == m_slots.size ())
    {
        // Grow: unroll the ring into a buffer twice as large.
        std::vector<FabricQueueItem> grown (m_slots.empty () ? 16 : 2 * m_slots.size ());
        for (std::size_t i = 0; i < m_size; ++i)
        {
            grown[i] = std::move (m_slots[(m_head + i) & (m_slots.size () - 1)]);
        }
        m_slots.swap (grown);
        m_head = 0;
    }
    m_slots[(m_head + m_size) & (m_slots.size () - 1)] = std::move (item);
    ++m_size;
}

FabricQueueItem
StrictPriorityQueue::Fifo::pop_front ()
{
    FabricQueueItem item = std::move (m_slots[m_head]); // leaves the slot's packet null
    m_head = (m_head + 1) & (m_slots.size () - 1);
    --m_size;
    return item;
}

FabricQueueItem
StrictPriorityQueue::DoDequeue (Time /* now */)
{
    for (auto& fifo : m_fifo)
    {
        if (!fifo.empty ())
        {
            return fifo.pop_front ();
        }
    }
    NS_ABORT_MSG ("StrictPriorityQueue: DoDequeue on an empty queue");
    return FabricQueueItem ();
}

bool
StrictPriorityQueue::DoDequeueUnpaused (Time /* now */, uint8_t pausedClasses,
                                        FabricQueueItem& item)
{
    for (uint32_t level = 0; level < m_fifo.size (); ++level)
    {
        // Queue `level` holds class `level`; the last one also every class above it.
        const uint32_t classes =
            level + 1 < m_levels ? 1u << level : (0xFFu << level) & 0xFFu;
        if (!m_fifo[level].empty () && (pausedClasses & classes) == 0)
        {
            item = m_fifo[level].pop_front ();
            return true;
        }
    }
    return false;
}

} // namespace ns3
