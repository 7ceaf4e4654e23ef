/*
 * disaggsim: the switch port of pHost: a few strict priority levels, one shared buffer.
 */
#ifndef DISAGGSIM_PHOST_QUEUE_H
#define DISAGGSIM_PHOST_QUEUE_H

#include "topologies/model/fabric-queue.h"

#include <cstddef>
#include <vector>

namespace ns3
{

/**
 * \brief Strict-priority FIFO levels over one shared drop-tail buffer: the commodity switch
 * pHost asks for (pHost CoNEXT'15 §1, §3.3: a few priority levels, no per-flow state).  A
 * frame's level is FabricHeader::rank (0 = highest; a rank beyond the last level goes to the
 * last).  The buffer limit is the base's MaxBytes (ClosTopology::BufferBytes, 36864 B):
 * an arriving frame that does not fit is dropped, whatever its level (drop-tail, no
 * eviction: commodity shared-buffer behaviour).
 */
class PhostQueue : public FabricQueue
{
  public:
    static TypeId GetTypeId ();
    PhostQueue ();
    ~PhostQueue () override;

    /// \returns the frames waiting at level \p level.
    uint32_t GetNPacketsAt (uint32_t level) const;

  protected:
    /// True: a lone frame is stored and removed with no other effect.
    bool PassesLoneFrame () const override;
    bool DoEnqueue (FabricQueueItem&& item) override;
    FabricQueueItem DoDequeue (Time now) override;

  private:
    /// One level's FIFO: a ring buffer of power-of-two capacity that doubles when full (no
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

    uint32_t m_levels{2};
    std::vector<Fifo> m_fifo;
};

} // namespace ns3

#endif // DISAGGSIM_PHOST_QUEUE_H
