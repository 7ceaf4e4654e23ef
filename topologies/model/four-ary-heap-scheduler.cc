/*
 * disaggsim: the event queue of the driver: an implicit 4-ary min-heap.
 */
#include "four-ary-heap-scheduler.h"

#include "ns3/abort.h"
#include "ns3/assert.h"
#include "ns3/log.h"
#include "ns3/uinteger.h"

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
                            .AddConstructor<FourAryHeapScheduler> ()
                            .AddAttribute ("DelayLanes",
                                           "Most insertion delays (ts - now) that get a FIFO lane "
                                           "(heads in a winner tree); 0 = a plain 4-ary heap.  "
                                           "Same event order either way",
                                           UintegerValue (64),
                                           MakeUintegerAccessor (&FourAryHeapScheduler::m_maxLanes),
                                           MakeUintegerChecker<uint32_t> (0, 4096));
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
    Scheduler::Event ev;
    ev.key.m_ts = static_cast<uint64_t> (key >> 64);
    ev.key.m_uid = static_cast<uint32_t> (key >> 32);
    if (IsLaneKey (key))
    {
        const LaneEvent& head = m_lanes[LaneOfKey (key)].Front ();
        ev.impl = head.impl;
        ev.key.m_context = head.context;
        return ev;
    }
    const Payload& payload = m_payload[static_cast<uint32_t> (key)];
    ev.impl = payload.impl;
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
FourAryHeapScheduler::Lane::PushBack (const LaneEvent& event)
{
    if (count == ring.size ())
    {
        std::vector<LaneEvent> grown (ring.empty () ? 64 : 2 * ring.size ());
        for (std::size_t k = 0; k < count; ++k)
        {
            grown[k] = ring[(head + k) & (ring.size () - 1)];
        }
        ring.swap (grown);
        head = 0;
    }
    ring[(head + count) & (ring.size () - 1)] = event;
    ++count;
}

uint32_t
FourAryHeapScheduler::LaneOf (uint64_t delay)
{
    if (m_maxLanes == 0)
    {
        return kNoLane;
    }
    if (m_laneTable.empty ())
    {
        std::size_t slots = 1;
        while (slots < 4 * std::size_t (m_maxLanes))
        {
            slots <<= 1;
        }
        m_laneTable.assign (slots, 0);
        m_leaves = 1;
        while (m_leaves < m_maxLanes)
        {
            m_leaves <<= 1;
        }
        m_tree.assign (2 * m_leaves, kInfinity);
    }
    const std::size_t mask = m_laneTable.size () - 1;
    // Fibonacci hashing of the delay; linear probing.
    std::size_t i = static_cast<std::size_t> ((delay * 0x9E3779B97F4A7C15ULL) >> 40) & mask;
    for (;; i = (i + 1) & mask)
    {
        const uint32_t entry = m_laneTable[i];
        if (entry == 0)
        {
            if (m_lanes.size () >= m_maxLanes)
            {
                return kNoLane;
            }
            m_lanes.emplace_back ();
            m_lanes.back ().delay = delay;
            m_laneTable[i] = static_cast<uint32_t> (m_lanes.size ());
            return static_cast<uint32_t> (m_lanes.size () - 1);
        }
        if (m_lanes[entry - 1].delay == delay)
        {
            return entry - 1;
        }
    }
}

void
FourAryHeapScheduler::HeapInsert (Key key)
{
    if (m_size == m_capacity)
    {
        Grow ();
    }
    ++m_size;
    SiftUp (m_size - 1, key);
}

void
FourAryHeapScheduler::Insert (const Scheduler::Event& ev)
{
    // ns-3 never schedules into the past; should an earlier key come, it just misses lanes.
    const uint32_t lane = ev.key.m_ts >= m_now ? LaneOf (ev.key.m_ts - m_now) : kNoLane;
    if (lane != kNoLane)
    {
        Lane& l = m_lanes[lane];
        const Key key = KeyOf (ev.key, kLaneTag | lane);
        if (l.count == 0)
        {
            // The lane's new head enters the winner tree.
            l.PushBack (LaneEvent{key, ev.impl, ev.key.m_context});
            UpdateLaneHead (lane, key);
            return;
        }
        if (l.Back ().key < key)
        {
            // Behind the tail: the lane stays sorted, nothing else moves.
            l.PushBack (LaneEvent{key, ev.impl, ev.key.m_context});
            return;
        }
    }
    uint32_t slot;
    if (m_freeSlots.empty ())
    {
        slot = static_cast<uint32_t> (m_payload.size ());
        NS_ABORT_MSG_IF (slot >= kLaneTag, "FourAryHeapScheduler: more than 2^31 pending events");
        m_payload.push_back (Payload{ev.impl, ev.key.m_context});
    }
    else
    {
        slot = m_freeSlots.back ();
        m_freeSlots.pop_back ();
        m_payload[slot] = Payload{ev.impl, ev.key.m_context};
    }
    HeapInsert (KeyOf (ev.key, slot));
}

void
FourAryHeapScheduler::UpdateLaneHead (uint32_t lane, Key key)
{
    Key* tree = m_tree.data ();
    std::size_t i = m_leaves + lane;
    tree[i] = key;
    while (i > 1)
    {
        const Key sibling = tree[i ^ 1];
        key = sibling < key ? sibling : key;
        i >>= 1;
        tree[i] = key;
    }
}

Scheduler::Event
FourAryHeapScheduler::PopLane (uint32_t lane)
{
    Lane& l = m_lanes[lane];
    const LaneEvent& head = l.Front ();
    Scheduler::Event ev;
    ev.impl = head.impl;
    ev.key.m_ts = static_cast<uint64_t> (head.key >> 64);
    ev.key.m_uid = static_cast<uint32_t> (head.key >> 32);
    ev.key.m_context = head.context;
    l.PopFront ();
    UpdateLaneHead (lane, l.count > 0 ? l.Front ().key : kInfinity);
    return ev;
}

std::size_t
FourAryHeapScheduler::GetLaneBacklog () const
{
    std::size_t backlog = 0;
    for (const Lane& l : m_lanes)
    {
        backlog += l.count > 0 ? l.count - 1 : 0;
    }
    return backlog;
}

void
FourAryHeapScheduler::HeapErase (std::size_t i)
{
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
}

bool
FourAryHeapScheduler::IsEmpty () const
{
    return m_size == 0 && LaneTop () == kInfinity;
}

Scheduler::Event
FourAryHeapScheduler::PeekNext () const
{
    NS_ASSERT_MSG (!IsEmpty (), "FourAryHeapScheduler: PeekNext on an empty queue");
    const Key laneTop = LaneTop ();
    return ToEvent (m_size == 0 || laneTop < m_heap[0] ? laneTop : m_heap[0]);
}

Scheduler::Event
FourAryHeapScheduler::RemoveNext ()
{
    NS_ASSERT_MSG (!IsEmpty (), "FourAryHeapScheduler: RemoveNext on an empty queue");
    const Key laneTop = LaneTop ();
    if (m_size == 0 || laneTop < m_heap[0])
    {
        m_now = static_cast<uint64_t> (laneTop >> 64);
        return PopLane (LaneOfKey (laneTop));
    }
    const Key top = m_heap[0];
    m_now = static_cast<uint64_t> (top >> 64);
    HeapErase (0);
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
    if (i < m_size)
    {
        const Key removed = m_heap[i];
        HeapErase (i);
        Take (removed);
        return;
    }
    // Not in the heap: a lane's head, or an event behind one.
    for (uint32_t lane = 0; lane < m_lanes.size (); ++lane)
    {
        Lane& l = m_lanes[lane];
        if (l.count > 0 && (l.Front ().key >> 32) == wanted)
        {
            PopLane (lane);
            return;
        }
        const std::size_t mask = l.ring.size () - 1;
        for (std::size_t k = 1; k < l.count; ++k)
        {
            if ((l.ring[(l.head + k) & mask].key >> 32) != wanted)
            {
                continue;
            }
            for (std::size_t j = k; j + 1 < l.count; ++j)
            {
                l.ring[(l.head + j) & mask] = l.ring[(l.head + j + 1) & mask];
            }
            --l.count;
            return;
        }
    }
    NS_ASSERT_MSG (false, "FourAryHeapScheduler: Remove of an unknown event");
}

} // namespace ns3
