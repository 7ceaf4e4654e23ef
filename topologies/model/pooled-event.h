/*
 * disaggsim: events of the fabric's hot path, allocated from a free list.
 */
#ifndef DISAGGSIM_POOLED_EVENT_H
#define DISAGGSIM_POOLED_EVENT_H

#include "ns3/event-impl.h"
#include "ns3/nstime.h"

#include <cstddef>
#include <new>

namespace ns3
{

/**
 * \brief A free list of \p Size-byte blocks for ns-3 events of one type.
 *
 * Every frame hop schedules an arrival event and every busy port a transmit completion:
 * about 140 M events per 10,000-flow pFabric run, each an EventImpl that ns-3 allocates with
 * new and frees when it has run.  A block taken from and returned to this list costs a few
 * loads instead of a malloc/free pair (bench/RESULTS.md "What moved the numbers").  Blocks
 * are carved from 256-block chunks and never returned to the system: the list holds at most
 * the peak number of such events pending at once.  Single-threaded, like ns-3's default
 * simulator.
 */
template <std::size_t Size>
class EventBlockPool
{
  public:
    static void* Allocate ()
    {
        if (s_free == nullptr)
        {
            Refill ();
        }
        Node* node = s_free;
        s_free = node->next;
        return node;
    }

    static void Release (void* block)
    {
        Node* node = static_cast<Node*> (block);
        node->next = s_free;
        s_free = node;
    }

  private:
    union Node
    {
        Node* next;
        alignas (std::max_align_t) unsigned char bytes[Size];
    };

    static void Refill ()
    {
        constexpr std::size_t kChunk = 256;
        Node* chunk = static_cast<Node*> (::operator new (kChunk * sizeof (Node)));
        for (std::size_t i = 0; i < kChunk; ++i)
        {
            Release (&chunk[i]);
        }
    }

    static inline Node* s_free = nullptr;
};

/**
 * \brief Base of an EventImpl whose instances live in an EventBlockPool: ns-3 deletes a
 * finished or cancelled event through its virtual destructor, which then calls this class's
 * operator delete.
 */
template <typename Derived>
class PooledEventImpl : public EventImpl
{
  public:
    static void* operator new (std::size_t size)
    {
        static_assert (sizeof (Derived) > 0, "complete type");
        return size == sizeof (Derived) ? EventBlockPool<sizeof (Derived)>::Allocate ()
                                        : ::operator new (size);
    }

    static void operator delete (void* block, std::size_t size)
    {
        if (size == sizeof (Derived))
        {
            EventBlockPool<sizeof (Derived)>::Release (block);
        }
        else
        {
            ::operator delete (block);
        }
    }
};

/**
 * \brief A pooled event that calls \p Method of a \p T with the event's own time: what
 * MakeEvent (&T::Method, object, at) would bind, from the pool.  The event is scheduled
 * \p delay ahead with \p at = now + delay, the key ns-3 gives it, so \p Method gets
 * Simulator::Now () without asking for it (one Simulator::GetImpl call per event saved;
 * bench/RESULTS.md "What moved the numbers").  Used for a port's transmit completion and
 * pFabric's retransmission timer.  \p object must outlive the event, or the event be
 * cancelled.
 */
template <typename T, void (T::*Method) (Time)>
class PooledTimedEvent final : public PooledEventImpl<PooledTimedEvent<T, Method>>
{
  public:
    PooledTimedEvent (T* object, Time at)
          : m_object (object)
          , m_at (at)
    {
    }

  private:
    void Notify () override
    {
        (m_object->*Method) (m_at);
    }

    T* m_object;
    Time m_at; ///< the event's own time: Simulator::Now () when it runs
};

} // namespace ns3

#endif // DISAGGSIM_POOLED_EVENT_H
