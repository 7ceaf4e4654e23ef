/*
 * disaggsim: HPCC (Li et al. SIGCOMM'19), the sender side of a RoCE queue pair.
 */
#ifndef DISAGGSIM_ROCE_HPCC_H
#define DISAGGSIM_ROCE_HPCC_H

#include "roce-cc.h"

#include "topologies/model/int-tag.h"

#include "ns3/data-rate.h"
#include "ns3/traced-callback.h"

namespace ns3
{

/**
 * \brief HPCC's sender algorithm, Li et al. SIGCOMM'19 §3.3, Algorithm 1, with the INT records
 * every switch egress port stamps on the QP's data packets (FabricNetDevice, IntTag) and the
 * receiver echoes in each ACK.
 *
 * T = the fabric's base RTT; W_init = line rate x T; W_AI = RateAi x T.
 * - MeasureInflight(ack): for each hop i with a previous record L[i]:
 *   txRate = (ack.L[i].txBytes − L[i].txBytes) / (ack.L[i].ts − L[i].ts),
 *   u' = min(ack.L[i].qlen, L[i].qlen) / (ack.L[i].B × T) + txRate / ack.L[i].B;
 *   u = the largest u', τ = that hop's ts difference; τ ← min(τ, T);
 *   U ← (1 − τ/T) U + (τ/T) u.
 * - ComputeWind(U, updateWc): if U ≥ η or incStage ≥ MaxStage: W = Wc / (U/η) + W_AI
 *   (and incStage = 0), else W = Wc + W_AI (incStage + 1); Wc = W only when updateWc.
 * - NewAck(ack): updateWc iff ack.seq > lastUpdateSeq (then lastUpdateSeq = snd_nxt): once
 *   per RTT the reference window moves, in between the window reacts to every ACK (fast
 *   reaction, §3.3); window = W, rate = W / T; L = ack.L.
 * The first ACK only records L (no difference to take).  W is kept within
 * [MinRate x T, W_init].  Defaults and sources: transports/roce/doc/roce.md §HPCC.
 */
class RoceHpcc : public RoceCongestionControl
{
  public:
    static TypeId GetTypeId ();
    RoceHpcc ();
    ~RoceHpcc () override;

    void Start (RoceRateTarget* target, uint64_t lineRateBps, Time baseRtt, Time now) override;
    void OnAck (uint64_t ackSeq, const IntTag* intRecords, Time now) override;
    bool UsesInt () const override;

    /// \returns the current window W in bytes.
    double GetWindowBytes () const
    {
        return m_windowBytes;
    }

    /// \returns the normalized inflight bytes U.
    double GetU () const
    {
        return m_u;
    }

    /// Signature of the Window trace source: W in bytes and U.
    typedef void (*WindowTracedCallback) (double windowBytes, double u);

  private:
    /// \returns U after the records of \p ack.
    double MeasureInflight (const IntTag& ack);
    /// \returns W for \p u; updates Wc and incStage if \p updateWc.
    double ComputeWind (double u, bool updateWc);

    // attributes
    double m_eta{0.95};
    uint32_t m_maxStage{5};
    DataRate m_rateAi;
    DataRate m_minRate;

    // state
    double m_baseRttSeconds{0};
    double m_windowInitBytes{0};
    double m_windowAiBytes{0};
    double m_windowBytes{0};
    double m_referenceWindowBytes{0}; //!< Wc
    double m_u{0};
    uint32_t m_incStage{0};
    uint64_t m_lastUpdateSeq{0};
    bool m_haveRecords{false};
    IntTag m_records; //!< L: the records of the last ACK
    TracedCallback<double, double> m_windowTrace;
};

} // namespace ns3

#endif // DISAGGSIM_ROCE_HPCC_H
