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
 * | operation | cost |
 * | --- | --- |
 * | Insert | O(log4 n) sift-up (a new event is usually later than its parent: O(1)) |
 * | PeekNext, IsEmpty | O(1) |
 * | RemoveNext | O(log4 n) sift-down |
 * | Remove (Simulator::Remove) | O(n) search by uid, then O(log4 n) |
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

  private:
    /// A heap slot is one 128-bit key: m_ts << 64 | m_uid << 32 | payload slot.  The uid is
    /// unique, so the order is (m_ts, m_uid); the low word names the event's payload in
    /// m_payload.  16 B per slot: the four children of a node share one 64 B cache line.
    using Key = unsigned __int128;

    /// The rest of a Scheduler::Event, out of the heap.
    struct Payload
    {
        EventImpl* impl;
        uint32_t context;
    };

    static Key KeyOf (const Scheduler::EventKey& key, uint32_t slot)
    {
        return (static_cast<Key> (key.m_ts) << 64) | (static_cast<Key> (key.m_uid) << 32) | slot;
    }

    Scheduler::Event ToEvent (Key key) const;
    /// Release the payload slot of \p key; \returns its event.
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
};

} // namespace ns3

#endif // DISAGGSIM_FOUR_ARY_HEAP_SCHEDULER_H
