/*
 * disaggsim: the event queue of the driver: an implicit 4-ary min-heap.
 */
#ifndef DISAGGSIM_FOUR_ARY_HEAP_SCHEDULER_H
#define DISAGGSIM_FOUR_ARY_HEAP_SCHEDULER_H

#include "ns3/scheduler.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ns3
{

/**
 * \brief An ns3::Scheduler on an implicit 4-ary min-heap (a d-ary heap, Johnson 1975,
 * "Priority queues with update and finding minimum spanning trees"), keyed by the
 * (timestamp, uid) pair that orders every ns-3 event.
 *
 * Every key is unique (the uid is), so any correct priority queue runs the events of a
 * simulation in the same order: switching to this scheduler changes no result, only speed.
 * It replaces ns3::PriorityQueueScheduler (a binary heap, std::priority_queue) as the
 * driver's default because the binary heap's sift-down was a fifth of a pHost run
 * (bench/RESULTS.md, pHost "Speed"): a 4-ary heap is half as deep, the four children of
 * a node share one cache line (a heap slot is a 16 B key; the event's impl and context wait
 * in a side table), and the key is compared as one 128-bit integer, so the smallest of four
 * children is picked without branches.
 *
 * Delay lanes.  Most events of a fabric are scheduled a fixed delay ahead: a frame's
 * arrival one link delay (plus the cut-through delay) after it starts, a port's transmit
 * completion one MSS frame time ahead, a timeout one RTO ahead.  Events inserted with the same
 * delay d = ts - now, with now never decreasing, arrive in (timestamp, uid) order, so each
 * such delay gets a FIFO lane (up to DelayLanes of them): inserting behind a lane's tail is
 * O(1).  The lanes' heads meet in a winner tree (a tournament: each node holds the smaller of
 * its two children; 64 lanes, 6 levels), and the events that fit no lane (a key not above
 * its lane's tail, checked, so the order holds whatever "now" is; or no lane left) in the
 * 4-ary heap; RemoveNext takes the smaller of the tree's and the heap's tops.  Replaying a
 * lane's leaf reads its siblings at addresses known in advance, so it costs a chain of
 * compares, not of dependent loads.  A lane keeps each event's impl and context beside its
 * key; only heap events take a slot of the payload side table.  In setup (b) of
 * bench_vs_reference 114 M of 146 M inserts land behind a lane's tail, 9 M start a lane
 * and 24 M go to the heap, which holds ~130 of the ~530 pending events (bench/RESULTS.md
 * "What moved the numbers").  This is the classic merge of
 * sorted runs; the pop order is still exactly (timestamp, uid), tested against an oracle
 * with 64, 8 and 0 lanes.
 *
 * | operation | cost |
 * | --- | --- |
 * | Insert | O(1) behind a lane's tail; O(log2 L) as a lane's new head; else O(log4 h) |
 * | PeekNext, IsEmpty | O(1) |
 * | RemoveNext | O(log2 L) from a lane (L: lanes), O(log4 h) from the heap (h: its size) |
 * | Remove (Simulator::Remove) | O(n) search by uid, then as RemoveNext |
 */
class FourAryHeapScheduler : public Scheduler
{
  public:
    static TypeId GetTypeId ();
    FourAryHeapScheduler ();
    ~FourAryHeapScheduler () override;
    FourAryHeapScheduler (const FourAryHeapScheduler&) = delete;
    FourAryHeapScheduler& operator= (const FourAryHeapScheduler&) = delete;

    void Insert (const Scheduler::Event& ev) override;
    bool IsEmpty () const override;
    Scheduler::Event PeekNext () const override;
    Scheduler::Event RemoveNext () override;
    void Remove (const Scheduler::Event& ev) override;

    /// \returns events now waiting in lanes behind their lane's head (not in the heap).
    std::size_t GetLaneBacklog () const;

  private:
    /// A heap slot is one 128-bit key: m_ts << 64 | m_uid << 32 | tag.  The uid is unique, so
    /// the order is (m_ts, m_uid).  The tag names where the rest of the event waits: a slot
    /// of m_payload, or (with kLaneTag set) the lane whose head the event is.  16 B per slot:
    /// the four children of a node share one 64 B cache line.
    using Key = unsigned __int128;

    /// The rest of a Scheduler::Event that went to the heap directly, out of the heap.
    struct Payload
    {
        EventImpl* impl;
        uint32_t context;
    };

    /// An event in a lane: its key and the rest, side by side (a lane is read in order).
    struct LaneEvent
    {
        Key key;
        EventImpl* impl;
        uint32_t context;
    };

    static constexpr uint32_t kNoLane = UINT32_MAX;
    static constexpr uint32_t kLaneTag = 0x80000000U;

    /// A FIFO of events with one insertion delay, ascending: a ring buffer of 2^k entries.
    struct Lane
    {
        uint64_t delay{0};
        std::vector<LaneEvent> ring;
        std::size_t head{0};
        std::size_t count{0};

        const LaneEvent& Front () const
        {
            return ring[head];
        }
        const LaneEvent& Back () const
        {
            return ring[(head + count - 1) & (ring.size () - 1)];
        }
        void PushBack (const LaneEvent& event);
        void PopFront ()
        {
            head = (head + 1) & (ring.size () - 1);
            --count;
        }
    };

    static bool IsLaneKey (Key key)
    {
        return (static_cast<uint32_t> (key) & kLaneTag) != 0;
    }

    static uint32_t LaneOfKey (Key key)
    {
        return static_cast<uint32_t> (key) & ~kLaneTag;
    }

    /// \returns the lane of insertion delay \p delay, made if there is room; kNoLane if not.
    uint32_t LaneOf (uint64_t delay);
    /// Put \p key into the heap.
    void HeapInsert (Key key);
    /// Take heap node \p i out of the heap (its event is the caller's).
    void HeapErase (std::size_t i);
    /// Lane \p lane's head changed to \p key (kInfinity: the lane is empty): replay its path
    /// in the winner tree.
    void UpdateLaneHead (uint32_t lane, Key key);
    /// Take the head of lane \p lane out; \returns its event.
    Scheduler::Event PopLane (uint32_t lane);
    /// \returns the smallest lane head (kInfinity if every lane is empty).
    Key LaneTop () const
    {
        return m_tree.empty () ? kInfinity : m_tree[1];
    }

    /// Above every real key: an empty lane's head.
    static constexpr Key kInfinity = ~Key (0);

    static Key KeyOf (const Scheduler::EventKey& key, uint32_t slot)
    {
        return (static_cast<Key> (key.m_ts) << 64) | (static_cast<Key> (key.m_uid) << 32) | slot;
    }

    /// \returns the event of heap key \p key (a lane's head, or a payload slot's event).
    Scheduler::Event ToEvent (Key key) const;
    /// Release the payload slot of \p key, not a lane key; \returns its event.
    Scheduler::Event Take (Key key);
    /// Put \p key into the hole at \p i, moving it towards the root as needed.
    void SiftUp (std::size_t i, Key key);
    /// Put \p key into the hole at \p i, moving it towards the leaves as needed.
    void SiftDown (std::size_t i, Key key);

    /// Make room for one more node.
    void Grow ();

    /// Heap node i lives at m_heap[i] = m_buffer[i + 3]: with the 64 B aligned buffer, the
    /// children 4i+1..4i+4 of every node fill one cache line.
    static constexpr std::size_t kOffset = 3;
    Key* m_buffer{nullptr}; ///< 64 B aligned, kOffset + m_capacity keys
    Key* m_heap{nullptr};
    std::size_t m_capacity{0};
    std::size_t m_size{0};
    std::vector<Payload> m_payload;
    std::vector<uint32_t> m_freeSlots;

    uint32_t m_maxLanes{64}; ///< DelayLanes attribute (0: a plain heap)
    uint64_t m_now{0};       ///< timestamp of the last event removed: the simulation time
    std::vector<Lane> m_lanes;
    /// Open-addressing map insertion delay -> lane + 1 (0 = empty slot), 4 x m_maxLanes slots.
    std::vector<uint32_t> m_laneTable;
    /// Winner tree over the lanes' head keys: m_tree[1] is the smallest, node i is the
    /// smaller of nodes 2i and 2i+1, lane l's head is leaf m_leaves + l.  Replaying one leaf
    /// reads its siblings, whose addresses do not depend on any comparison, so the loads
    /// overlap, unlike a heap's sift-down, where each level's address waits on the last
    /// level's comparisons.
    std::vector<Key> m_tree;
    std::size_t m_leaves{0};
};

} // namespace ns3

#endif // DISAGGSIM_FOUR_ARY_HEAP_SCHEDULER_H
