/*
 * disaggsim: a growable ring-buffer FIFO for frames waiting at a port.
 */
#ifndef DISAGGSIM_RING_FIFO_H
#define DISAGGSIM_RING_FIFO_H

#include <cstddef>
#include <utility>
#include <vector>

namespace ns3
{

/**
 * \brief A FIFO in one ring buffer of 2^k slots that doubles when full (and never shrinks).
 *
 * For a port's egress queue: std::deque allocates a 512 B block every few frames and frees
 * the one it emptied, so a busy queue's frames keep moving to fresh memory; a ring reuses
 * the same slots, which stay in cache while the queue cycles (bench/RESULTS.md, RoCEv2
 * "Speed (one sitting").  The same structure as FourAryHeapScheduler's lanes.
 */
template <typename T>
class RingFifo
{
  public:
    bool IsEmpty () const
    {
        return m_count == 0;
    }

    std::size_t GetSize () const
    {
        return m_count;
    }

    /// Append \p item at the tail.
    void PushBack (T&& item)
    {
        if (m_count == m_slots.size ())
        {
            Grow ();
        }
        m_slots[(m_head + m_count) & (m_slots.size () - 1)] = std::move (item);
        ++m_count;
    }

    /// \returns the head (the queue must not be empty).
    T& Front ()
    {
        return m_slots[m_head];
    }

    /// Remove the head and \returns it (the queue must not be empty).  The slot is reset, so
    /// that it holds no reference (ns-3's Ptr has no move: moving from it copies).
    T PopFront ()
    {
        T item = std::move (m_slots[m_head]);
        m_slots[m_head] = T ();
        m_head = (m_head + 1) & (m_slots.size () - 1);
        --m_count;
        return item;
    }

  private:
    void Grow ()
    {
        std::vector<T> grown (m_slots.empty () ? kInitialSlots : 2 * m_slots.size ());
        for (std::size_t k = 0; k < m_count; ++k)
        {
            grown[k] = std::move (m_slots[(m_head + k) & (m_slots.size () - 1)]);
        }
        m_slots.swap (grown);
        m_head = 0;
    }

    static constexpr std::size_t kInitialSlots = 8;
    std::vector<T> m_slots;
    std::size_t m_head{0};
    std::size_t m_count{0};
};

} // namespace ns3

#endif // DISAGGSIM_RING_FIFO_H
