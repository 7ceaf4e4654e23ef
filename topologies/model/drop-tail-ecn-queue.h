/*
 * disaggsim: byte-limited FIFO with DCTCP-style ECN marking.
 */
#ifndef DISAGGSIM_DROP_TAIL_ECN_QUEUE_H
#define DISAGGSIM_DROP_TAIL_ECN_QUEUE_H

#include "fabric-queue.h"

#include <deque>

namespace ns3
{

/**
 * \brief Byte-limited FIFO (tail drop at MaxBytes) that CE-marks an ECN-capable frame when
 * the occupancy at its arrival exceeds MarkThresholdBytes (DCTCP's switch rule: "mark
 * arriving packets if the queue occupancy is greater than K", Alizadeh et al. SIGCOMM'10
 * §3.1).  MarkThresholdBytes = 0 disables marking (plain DropTail, the TCP baseline).
 */
class DropTailEcnQueue : public FabricQueue
{
  public:
    static TypeId GetTypeId ();
    DropTailEcnQueue ();
    ~DropTailEcnQueue () override;

    uint32_t GetMarkThresholdBytes () const
    {
        return m_markThresholdBytes;
    }

  protected:
    bool DoEnqueue (FabricQueueItem&& item) override;
    FabricQueueItem DoDequeue (Time now) override;

  private:
    uint32_t m_markThresholdBytes{0};
    std::deque<FabricQueueItem> m_items;
};

} // namespace ns3

#endif // DISAGGSIM_DROP_TAIL_ECN_QUEUE_H
