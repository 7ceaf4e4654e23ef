/*
 * disaggsim: the event queue of the driver: an implicit 4-ary min-heap.
 */
#include "four-ary-heap-scheduler.h"

#include "ns3/assert.h"
#include "ns3/log.h"

namespace ns3
{

NS_LOG_COMPONENT_DEFINE ("FourAryHeapScheduler");
NS_OBJECT_ENSURE_REGISTERED (FourAryHeapScheduler);

TypeId
FourAryHeapScheduler::GetTypeId ()
{
    static TypeId tid = TypeId ("ns3::FourAryHeapScheduler")
                            .SetParent<Scheduler> ()
                            .SetGroupName ("Disaggsim")
                            .AddConstructor<FourAryHeapScheduler> ();
    return tid;
}

FourAryHeapScheduler::FourAryHeapScheduler () = default;

FourAryHeapScheduler::~FourAryHeapScheduler () = default;

Scheduler::Event
FourAryHeapScheduler::ToEvent (const Entry& entry)
{
    Scheduler::Event ev;
    ev.impl = entry.impl;
    ev.key.m_ts = static_cast<uint64_t> (entry.key >> 32);
    ev.key.m_uid = static_cast<uint32_t> (entry.key);
    ev.key.m_context = entry.context;
    return ev;
}

void
FourAryHeapScheduler::SiftUp (std::size_t i, const Entry& entry)
{
    while (i > 0)
    {
        const std::size_t parent = (i - 1) / 4;
        if (!(entry.key < m_heap[parent].key))
        {
            break;
        }
        m_heap[i] = m_heap[parent];
        i = parent;
    }
    m_heap[i] = entry;
}

void
FourAryHeapScheduler::SiftDown (std::size_t i, const Entry& entry)
{
    const std::size_t n = m_heap.size ();
    Entry* h = m_heap.data ();
    for (;;)
    {
        const std::size_t c = 4 * i + 1;
        std::size_t m;
        if (c + 3 < n)
        {
            // All four children: the smallest by selects, not branches.
            const std::size_t a = h[c + 1].key < h[c].key ? c + 1 : c;
            const std::size_t b = h[c + 3].key < h[c + 2].key ? c + 3 : c + 2;
            m = h[b].key < h[a].key ? b : a;
        }
        else if (c < n)
        {
            m = c;
            for (std::size_t j = c + 1; j < n; ++j)
            {
                m = h[j].key < h[m].key ? j : m;
            }
        }
        else
        {
            break;
        }
        if (!(h[m].key < entry.key))
        {
            break;
        }
        h[i] = h[m];
        i = m;
    }
    h[i] = entry;
}

void
FourAryHeapScheduler::Insert (const Scheduler::Event& ev)
{
    const Entry entry{KeyOf (ev.key), ev.impl, ev.key.m_context};
    m_heap.emplace_back ();
    SiftUp (m_heap.size () - 1, entry);
}

bool
FourAryHeapScheduler::IsEmpty () const
{
    return m_heap.empty ();
}

Scheduler::Event
FourAryHeapScheduler::PeekNext () const
{
    NS_ASSERT_MSG (!m_heap.empty (), "FourAryHeapScheduler: PeekNext on an empty queue");
    return ToEvent (m_heap.front ());
}

Scheduler::Event
FourAryHeapScheduler::RemoveNext ()
{
    NS_ASSERT_MSG (!m_heap.empty (), "FourAryHeapScheduler: RemoveNext on an empty queue");
    const Scheduler::Event next = ToEvent (m_heap.front ());
    const Entry last = m_heap.back ();
    m_heap.pop_back ();
    if (!m_heap.empty ())
    {
        SiftDown (0, last);
    }
    return next;
}

void
FourAryHeapScheduler::Remove (const Scheduler::Event& ev)
{
    const unsigned __int128 key = KeyOf (ev.key);
    std::size_t i = 0;
    while (i < m_heap.size () && m_heap[i].key != key)
    {
        ++i;
    }
    NS_ASSERT_MSG (i < m_heap.size (), "FourAryHeapScheduler: Remove of an unknown event");
    const Entry last = m_heap.back ();
    m_heap.pop_back ();
    if (i == m_heap.size ())
    {
        return; // it was the last slot
    }
    if (i > 0 && last.key < m_heap[(i - 1) / 4].key)
    {
        SiftUp (i, last);
    }
    else
    {
        SiftDown (i, last);
    }
}

} // namespace ns3
