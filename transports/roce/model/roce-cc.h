/*
 * disaggsim: the congestion-control seam of a RoCE queue pair (none, DCQCN, HPCC).
 */
#ifndef DISAGGSIM_ROCE_CC_H
#define DISAGGSIM_ROCE_CC_H

#include "ns3/nstime.h"
#include "ns3/object.h"

#include <cstdint>

namespace ns3
{

class IntTag;

/// What a congestion control drives: the queue pair's sending rate and window.
class RoceRateTarget
{
  public:
    virtual ~RoceRateTarget () = default;
    /// Pace data packets at \p bitRate (bit/s, at most the line rate).
    virtual void SetRateBps (uint64_t bitRate) = 0;
    /// Allow at most \p bytes of payload sent and not yet acknowledged.
    virtual void SetWindowBytes (uint64_t bytes) = 0;
    /// \returns the next payload byte the queue pair will send (snd_nxt).
    virtual uint64_t GetSndNxt () const = 0;
};

/**
 * \brief A queue pair's congestion control (the algorithm's per-QP state and timers).
 *
 * One object per queue pair, copied from the transport's prototype (CopyObject), so that
 * the attributes are the one configuration path.  The base is `none`: the QP sends at line
 * rate with no window, and PFC alone keeps the fabric lossless (transports/roce/doc/roce.md).
 */
class RoceCongestionControl : public Object
{
  public:
    static TypeId GetTypeId ();
    RoceCongestionControl ();
    ~RoceCongestionControl () override;

    /// Start controlling \p target, whose NIC runs at \p lineRateBps; \p baseRtt is the
    /// fabric's base round trip (HPCC's T).  Sets the initial rate (line rate) and window.
    virtual void Start (RoceRateTarget* target, uint64_t lineRateBps, Time baseRtt, Time now);
    /// The QP put a data frame of \p wireBytes on its NIC at \p now.
    virtual void OnDataSent (uint32_t wireBytes, Time now);
    /// An ACK or NACK for cumulative byte \p ackSeq arrived, with the echoed INT records
    /// \p intRecords (nullptr if it carries none).
    virtual void OnAck (uint64_t ackSeq, const IntTag* intRecords, Time now);
    /// A congestion notification packet arrived.
    virtual void OnCnp (Time now);
    /// The QP is done: cancel timers.
    virtual void Stop ();
    /// \returns true if data frames are sent ECN-capable (ECT(0)), so switches mark them.
    virtual bool UsesEcn () const;
    /// \returns true if data frames ask for INT records (FabricHeader::intRequested).
    virtual bool UsesInt () const;

  protected:
    void DoDispose () override;

    RoceRateTarget* m_target{nullptr};
    uint64_t m_lineRateBps{0};
};

} // namespace ns3

#endif // DISAGGSIM_ROCE_CC_H
