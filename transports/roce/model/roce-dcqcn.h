/*
 * disaggsim: DCQCN (Zhu et al. SIGCOMM'15), the reaction point of a RoCE queue pair.
 */
#ifndef DISAGGSIM_ROCE_DCQCN_H
#define DISAGGSIM_ROCE_DCQCN_H

#include "roce-cc.h"

#include "ns3/data-rate.h"
#include "ns3/event-id.h"
#include "ns3/traced-callback.h"

namespace ns3
{

/**
 * \brief DCQCN's reaction point (RP), Zhu et al. SIGCOMM'15 §3.1 (Figure 7's algorithm).
 *
 * State: current rate Rc, target rate Rt, α.  Until the first CNP the QP sends at line rate
 * (Rc = Rt = line) with α = 1.
 * - CNP (the receiver, the notification point, sends at most one per CnpInterval per QP
 *   while CE-marked packets arrive; RoceReceiver): Rt ← Rc (with ClampTargetRate false, as
 *   HPCC's simulator runs: only if a rate-increase event happened since the last cut);
 *   Rc ← max(MinRate, Rc (1 − α/2));
 *   α ← (1 − g) α + g; the timer and byte counters restart from 0.
 * - α timer: every AlphaTimer K without a CNP, α ← (1 − g) α.  Applied when α is next read
 *   (n whole periods since the last CNP: α (1 − g)^n, the same value as n timer events, with
 *   no event; the period is anchored at the CNP as the paper's timer is restarted there).
 *   It starts at the first CNP (as HPCC's simulator's ScheduleUpdateAlphaMlx does), so the
 *   first decrease uses α = 1 and halves the rate.
 * - Rate increase, each time the RateIncreaseTimer T expires (counter t) or ByteCounter B
 *   bytes were sent (counter bc), both counted since the last CNP:
 *   max(t, bc) < F: fast recovery, Rc ← (Rt + Rc)/2;
 *   min(t, bc) > F: hyper increase, Rt ← Rt + RateHai, Rc ← (Rt + Rc)/2;
 *   otherwise: additive increase, Rt ← Rt + RateAi, Rc ← (Rt + Rc)/2;
 *   Rt and Rc never exceed the line rate.  The timer stops once Rc = Rt = line rate.
 *   ByteCounter 0: no byte counter, bc reads as t (HPCC's simulator has the timer only).
 * Rates are integers in bit/s ((Rt + Rc)/2 rounds up).  Defaults and their sources:
 * transports/roce/doc/roce.md §DCQCN.
 */
class RoceDcqcn : public RoceCongestionControl
{
  public:
    static TypeId GetTypeId ();
    RoceDcqcn ();
    ~RoceDcqcn () override;

    void Start (RoceRateTarget* target, uint64_t lineRateBps, Time baseRtt, Time now) override;
    void OnDataSent (uint32_t wireBytes, Time now) override;
    void OnCnp (Time now) override;
    void Stop () override;
    bool UsesEcn () const override;

    /// \returns Rc in bit/s.
    uint64_t GetCurrentRateBps () const
    {
        return m_rcBps;
    }

    /// \returns Rt in bit/s.
    uint64_t GetTargetRateBps () const
    {
        return m_rtBps;
    }

    /// \returns α at \p now (the decays of the α timer up to \p now applied).
    double GetAlpha (Time now);

    /// \returns the CNPs this QP reacted to.
    uint64_t GetCnps () const
    {
        return m_cnps;
    }

    /// Signature of the Rate trace source: Rc and Rt in bit/s.
    typedef void (*RateTracedCallback) (uint64_t rcBps, uint64_t rtBps);

  private:
    /// Apply the α timer's decays up to \p now.
    void DecayAlpha (Time now);
    void RateIncreaseTimerExpired ();
    /// One rate-increase event (timer or byte counter).
    void IncreaseRate ();
    void Apply ();

    // attributes
    double m_g{1.0 / 256};
    Time m_alphaTimer;
    Time m_rateIncreaseTimer;
    uint64_t m_byteCounter{10000000};
    uint32_t m_fastRecoverySteps{5};
    bool m_clampTargetRate{true};
    DataRate m_rateAi;
    DataRate m_rateHai;
    DataRate m_minRate;

    // state
    uint64_t m_rcBps{0};
    uint64_t m_rtBps{0};
    double m_alpha{1.0};
    Time m_alphaAnchor;        //!< start of the current α-timer period
    bool m_alphaRunning{false}; //!< the α timer runs (after the first CNP)
    uint32_t m_timerCount{0};
    uint32_t m_byteCount{0};
    uint64_t m_bytesSinceCount{0};
    bool m_recovering{false}; //!< Rc or Rt below line rate: timer and byte counter run
    EventId m_increaseEvent;
    uint64_t m_cnps{0};
    TracedCallback<uint64_t, uint64_t> m_rateTrace;
};

} // namespace ns3

#endif // DISAGGSIM_ROCE_DCQCN_H
