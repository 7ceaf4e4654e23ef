/*
 * disaggsim: one bit per packet of a pFabric flow (the sender's SACK scoreboard, the
 * receiver's arrivals).
 */
#ifndef DISAGGSIM_PFABRIC_PACKET_BITS_H
#define DISAGGSIM_PFABRIC_PACKET_BITS_H

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <memory>

namespace ns3
{

/**
 * \brief One bit per packet of a flow, all clear after Reset: inline for flows of up to 192
 * packets, on the heap beyond.
 *
 * Most DDC flows are a few 4 KiB pages (remote memory is accessed a page at a time: paper
 * §2.2, "Page-level remote memory access"), so the bits sit in the sender or
 * receiver object itself and a timer or ACK touches no second, cold allocation: a
 * `std::vector<bool>` per flow was a separate cache miss per event in a heavy incast with
 * 12,000 flows in flight (bench/RESULTS.md, "What moved the numbers").
 */
class PfabricPacketBits
{
  public:
    /// Size for \p n packets, all clear.
    void Reset (uint32_t n)
    {
        m_heap.reset ();
        std::fill (std::begin (m_inline), std::end (m_inline), 0);
        if (n > kInlineBits)
        {
            m_heap = std::make_unique<uint64_t[]> ((n + 63) / 64); // zeroed
        }
    }

    /// \returns bit \p i (i below the size given to Reset).
    bool operator[] (uint32_t i) const
    {
        return (Words ()[i >> 6] >> (i & 63)) & 1U;
    }

    /// Set bit \p i (i below the size given to Reset).
    void Set (uint32_t i)
    {
        (m_heap ? m_heap.get () : m_inline)[i >> 6] |= uint64_t (1) << (i & 63);
    }

  private:
    static constexpr uint32_t kInlineBits = 192;

    const uint64_t* Words () const
    {
        return m_heap ? m_heap.get () : m_inline;
    }

    uint64_t m_inline[kInlineBits / 64]{};
    std::unique_ptr<uint64_t[]> m_heap;
};

} // namespace ns3

#endif // DISAGGSIM_PFABRIC_PACKET_BITS_H
