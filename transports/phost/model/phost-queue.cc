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

FabricQueueItem
PhostQueue::DoDequeue ()
{
    for (auto& fifo : m_fifo)
    {
        if (!fifo.empty ())
        {
            FabricQueueItem item = std::move (fifo.front ());
            fifo.pop_front ();
            return item;
        }
    }
    NS_ABORT_MSG ("PhostQueue: DoDequeue on an empty queue");
    return FabricQueueItem ();
}

} // namespace ns3
