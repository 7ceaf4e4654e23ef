/*
 * disaggsim: the switch port of pHost: a few strict priority levels, one shared buffer.
 */
#include "phost-queue.h"

#include "ns3/uinteger.h"

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED (PhostQueue);

TypeId
PhostQueue::GetTypeId ()
{
    static TypeId tid =
        TypeId ("ns3::PhostQueue")
            .SetParent<FabricQueue> ()
            .SetGroupName ("Disaggsim")
            .AddConstructor<PhostQueue> ()
            .AddAttribute ("PriorityLevels",
                           "Strict priority levels (FabricHeader::rank 0 = highest).  Set by "
                           "PhostFlowTransport::PriorityLevels (pHost CoNEXT'15 §3.3)",
                           UintegerValue (2), MakeUintegerAccessor (&PhostQueue::m_levels),
                           MakeUintegerChecker<uint32_t> (1, 8));
    return tid;
}

PhostQueue::PhostQueue () = default;

PhostQueue::~PhostQueue () = default;

uint32_t
PhostQueue::GetNPacketsAt (uint32_t level) const
{
    return level < m_fifo.size () ? static_cast<uint32_t> (m_fifo[level].size ()) : 0;
}

bool
PhostQueue::PassesLoneFrame () const
{
    return true;
}

bool
PhostQueue::DoEnqueue (FabricQueueItem&& item)
{
    if (m_fifo.size () != m_levels)
    {
        m_fifo.resize (m_levels);
    }
    const uint32_t level = item.header.rank < m_levels ? item.header.rank : m_levels - 1;
    m_fifo[level].push_back (std::move (item));
    return true;
}

void
PhostQueue::Fifo::push_back (FabricQueueItem&& item)
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
PhostQueue::Fifo::pop_front ()
{
    FabricQueueItem item = std::move (m_slots[m_head]);
    m_slots[m_head].packet = nullptr; // ns-3.37's Ptr has no move: drop the slot's reference
    m_head = (m_head + 1) & (m_slots.size () - 1);
    --m_size;
    return item;
}

FabricQueueItem
PhostQueue::DoDequeue (Time /* now */)
{
    for (auto& fifo : m_fifo)
    {
        if (!fifo.empty ())
        {
            return fifo.pop_front ();
        }
    }
    NS_ABORT_MSG ("PhostQueue: DoDequeue on an empty queue");
    return FabricQueueItem ();
}

} // namespace ns3
