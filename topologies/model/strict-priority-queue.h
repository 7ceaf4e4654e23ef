/*
 * disaggsim: a port queue of up to 8 traffic classes served in strict priority.
 */
#ifndef DISAGGSIM_STRICT_PRIORITY_QUEUE_H
#define DISAGGSIM_STRICT_PRIORITY_QUEUE_H

#include "fabric-queue.h"

#include <array>
#include <cstddef>
#include <vector>

namespace ns3
{

/**
 * \brief Strict-priority FIFO classes over one drop-tail buffer: the commodity switch port
 * with a few priority queues (IEEE 802.1Q §8.6.8.1, strict priority transmission selection;
 * pHost CoNEXT'15 §1, §3.3 asks for exactly this).  A frame's class is its
 * FabricHeader::trafficClass (the 802.1p PCP); Classes queues are kept and a class beyond the
 * last goes to the last.  Class 0 is served first, then 1, ...: the band order of ns-3's
 * PrioQueueDisc and the queue-index order of HPCC's simulator (BEgressQueue), i.e. an 802.1Q
 * priority-to-traffic-class table that maps PCP p to the (7 - p)-th queue.  The buffer limit
 * is the base's MaxBytes: an arriving frame that does not fit is dropped whatever its class
 * (drop-tail, no eviction: commodity shared-buffer behaviour).
 *
 * Pause (PFC, FabricNetDevice::Pause): a paused class is skipped, and the best unpaused
 * non-empty class is served (DoDequeueUnpaused).  With Classes < 8 the last queue holds
 * classes Classes-1..7 and is paused while any of them is.
 */
class StrictPriorityQueue : public FabricQueue
{
  public:
    static TypeId GetTypeId ();
    StrictPriorityQueue ();
    ~StrictPriorityQueue () override;

    /// \returns the frames waiting in queue \p level (0 = served first).
    uint32_t GetNPacketsAt (uint32_t level) const;

  protected:
    /// True: a lone frame is stored and removed with no other effect.
    bool PassesLoneFrame () const override;
    bool DoEnqueue (FabricQueueItem&& item) override;
    FabricQueueItem DoDequeue (Time now) override;
    bool DoDequeueUnpaused (Time now, uint8_t pausedClasses, FabricQueueItem& item) override;

  private:
    /// One class's FIFO: a ring buffer of power-of-two capacity that doubles when full (no
    /// allocation per frame once grown, unlike std::deque's chunks).
    class Fifo
    {
      public:
        bool empty () const
        {
            return m_size == 0;
        }

        std::size_t size () const
        {
            return m_size;
        }

        void push_back (FabricQueueItem&& item);
        FabricQueueItem pop_front ();

      private:
        std::vector<FabricQueueItem> m_slots;
        std::size_t m_head{0};
        std::size_t m_size{0};
    };

    uint32_t m_levels{kFabricTrafficClasses};
    std::vector<Fifo> m_fifo;
};

} // namespace ns3

#endif // DISAGGSIM_STRICT_PRIORITY_QUEUE_H
