/*
 * disaggsim: the event queue of the driver: an implicit 4-ary min-heap.
 */
#include "four-ary-heap-scheduler.h"

#include "ns3/assert.h"
#include "ns3/log.h"

#include <algorithm>
#include <new>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE ("FourAryHeapScheduler");
NS_OBJECT_ENSURE_REGISTERED (FourAryHeapScheduler);

namespace
{
constexpr std::align_val_t kLine{64};
} // namespace

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

FourAryHeapScheduler::~FourAryHeapScheduler ()
{
    ::operator delete[] (m_buffer, kLine);
}

void
FourAryHeapScheduler::Grow ()
{
    const std::size_t capacity = m_capacity == 0 ? 1021 : 2 * m_capacity + kOffset;
    auto* buffer =
        static_cast<Key*> (::operator new[] ((capacity + kOffset) * sizeof (Key), kLine));
    if (m_size > 0)
    {
        std::copy (m_heap, m_heap + m_size, buffer + kOffset);
    }
    ::operator delete[] (m_buffer, kLine);
    m_buffer = buffer;
    m_heap = buffer + kOffset;
    m_capacity = capacity;
}

Scheduler::Event
FourAryHeapScheduler::ToEvent (Key key) const
{
    const Payload& payload = m_payload[static_cast<uint32_t> (key)];
    Scheduler::Event ev;
    ev.impl = payload.impl;
    ev.key.m_ts = static_cast<uint64_t> (key >> 64);
    ev.key.m_uid = static_cast<uint32_t> (key >> 32);
    ev.key.m_context = payload.context;
    return ev;
}

Scheduler::Event
FourAryHeapScheduler::Take (Key key)
{
    const Scheduler::Event ev = ToEvent (key);
    m_freeSlots.push_back (static_cast<uint32_t> (key));
    return ev;
}

void
FourAryHeapScheduler::SiftUp (std::size_t i, Key key)
{
    Key* h = m_heap;
    while (i > 0)
    {
        const std::size_t parent = (i - 1) / 4;
        if (!(key < h[parent]))
        {
            break;
        }
        h[i] = h[parent];
        i = parent;
    }
    h[i] = key;
}

void
FourAryHeapScheduler::SiftDown (std::size_t i, Key key)
{
    const std::size_t n = m_size;
    Key* h = m_heap;
    for (;;)
    {
        const std::size_t c = 4 * i + 1;
        std::size_t m;
        if (c + 3 < n)
        {
            // All four children (one cache line): the smallest by selects, not branches.
            const std::size_t a = h[c + 1] < h[c] ? c + 1 : c;
            const std::size_t b = h[c + 3] < h[c + 2] ? c + 3 : c + 2;
            m = h[b] < h[a] ? b : a;
        }
        else if (c < n)
        {
            m = c;
            for (std::size_t j = c + 1; j < n; ++j)
            {
                m = h[j] < h[m] ? j : m;
            }
        }
        else
        {
            break;
        }
        if (!(h[m] < key))
        {
            break;
        }
        h[i] = h[m];
        i = m;
    }
    h[i] = key;
}

void
FourAryHeapScheduler::Insert (const Scheduler::Event& ev)
{
    uint32_t slot;
    if (m_freeSlots.empty ())
    {
        slot = static_cast<uint32_t> (m_payload.size ());
        m_payload.push_back (Payload{ev.impl, ev.key.m_context});
    }
    else
    {
        slot = m_freeSlots.back ();
        m_freeSlots.pop_back ();
        m_payload[slot] = Payload{ev.impl, ev.key.m_context};
    }
    if (m_size == m_capacity)
    {
        Grow ();
    }
    ++m_size;
    SiftUp (m_size - 1, KeyOf (ev.key, slot));
}

bool
FourAryHeapScheduler::IsEmpty () const
{
    return m_size == 0;
}

Scheduler::Event
FourAryHeapScheduler::PeekNext () const
{
    NS_ASSERT_MSG (m_size > 0, "FourAryHeapScheduler: PeekNext on an empty queue");
    return ToEvent (m_heap[0]);
}

Scheduler::Event
FourAryHeapScheduler::RemoveNext ()
{
    NS_ASSERT_MSG (m_size > 0, "FourAryHeapScheduler: RemoveNext on an empty queue");
    const Key top = m_heap[0];
    --m_size;
    if (m_size > 0)
    {
        SiftDown (0, m_heap[m_size]);
    }
    return Take (top);
}

void
FourAryHeapScheduler::Remove (const Scheduler::Event& ev)
{
    // Find the node by (m_ts, m_uid), the key's upper 96 bits.
    const Key wanted = KeyOf (ev.key, 0) >> 32;
    std::size_t i = 0;
    while (i < m_size && (m_heap[i] >> 32) != wanted)
    {
        ++i;
    }
    NS_ASSERT_MSG (i < m_size, "FourAryHeapScheduler: Remove of an unknown event");
    const Key removed = m_heap[i];
    --m_size;
    if (i < m_size)
    {
        const Key last = m_heap[m_size];
        if (i > 0 && last < m_heap[(i - 1) / 4])
        {
            SiftUp (i, last);
        }
        else
        {
            SiftDown (i, last);
        }
    }
    Take (removed);
}

} // namespace ns3
