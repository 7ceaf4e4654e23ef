/*
 * disaggsim: the event queue of the driver: an implicit 4-ary min-heap.
 */
#ifndef DISAGGSIM_FOUR_ARY_HEAP_SCHEDULER_H
#define DISAGGSIM_FOUR_ARY_HEAP_SCHEDULER_H

#include "ns3/scheduler.h"

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
 * a node are adjacent in memory, and the key is compared as one 128-bit integer
 * (timestamp << 32 | uid), so the smallest of four children is picked without branches.
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

    void Insert (const Scheduler::Event& ev) override;
    bool IsEmpty () const override;
    Scheduler::Event PeekNext () const override;
    Scheduler::Event RemoveNext () override;
    void Remove (const Scheduler::Event& ev) override;

  private:
    /// One heap slot: the event's order key and the rest of its Scheduler::Event.
    struct Entry
    {
        unsigned __int128 key; ///< m_ts << 32 | m_uid
        EventImpl* impl;
        uint32_t context;
    };

    static unsigned __int128 KeyOf (const Scheduler::EventKey& key)
    {
        return (static_cast<unsigned __int128> (key.m_ts) << 32) | key.m_uid;
    }

    static Scheduler::Event ToEvent (const Entry& entry);

    /// Put \p entry into the hole at \p i, moving it towards the root as needed.
    void SiftUp (std::size_t i, const Entry& entry);
    /// Put \p entry into the hole at \p i, moving it towards the leaves as needed.
    void SiftDown (std::size_t i, const Entry& entry);

    std::vector<Entry> m_heap;
};

} // namespace ns3

#endif // DISAGGSIM_FOUR_ARY_HEAP_SCHEDULER_H
