/*
 * disaggsim: DCQCN (Zhu et al. SIGCOMM'15 §3.1), the reaction point of a RoCE queue pair.
 */
#include "roce-dcqcn.h"

#include "ns3/boolean.h"
#include "ns3/double.h"
#include "ns3/simulator.h"
#include "ns3/trace-source-accessor.h"
#include "ns3/uinteger.h"

#include <algorithm>

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED (RoceDcqcn);

TypeId
RoceDcqcn::GetTypeId ()
{
    static TypeId tid =
        TypeId ("ns3::RoceDcqcn")
            .SetParent<RoceCongestionControl> ()
            .SetGroupName ("Disaggsim")
            .AddConstructor<RoceDcqcn> ()
            .AddAttribute ("G",
                           "α gain g: α <- (1-g)α + g on a CNP, (1-g)α per α period without "
                           "(1/256: DCQCN SIGCOMM'15 §5; HPCC's run.py and mix/config.txt "
                           "EWMA_GAIN 0.00390625; rdma-hw.cc's attribute default is 1/16)",
                           DoubleValue (1.0 / 256), MakeDoubleAccessor (&RoceDcqcn::m_g),
                           MakeDoubleChecker<double> (0, 1))
            .AddAttribute ("AlphaTimer",
                           "α update period K without a CNP (55 us: DCQCN §5; rdma-hw.cc "
                           "AlphaResumInterval 55; HPCC's run.py dcqcn 1 us, dcqcn_paper 50 us)",
                           TimeValue (MicroSeconds (55)),
                           MakeTimeAccessor (&RoceDcqcn::m_alphaTimer),
                           MakeTimeChecker (NanoSeconds (1)))
            .AddAttribute ("RateIncreaseTimer",
                           "Rate increase timer T (55 us: DCQCN §5 and HPCC's run.py "
                           "dcqcn_paper; rdma-hw.cc RPTimer 1500 us, mix/config.txt 900 us, "
                           "run.py dcqcn 300 us)",
                           TimeValue (MicroSeconds (55)),
                           MakeTimeAccessor (&RoceDcqcn::m_rateIncreaseTimer),
                           MakeTimeChecker (NanoSeconds (1)))
            .AddAttribute ("ByteCounter",
                           "Rate increase byte counter B in wire bytes (10 MB: DCQCN §5); 0: "
                           "no byte counter, the stage follows the timer count t alone "
                           "(HPCC's simulator, rdma-hw.cc RateIncEventMlx)",
                           UintegerValue (10000000),
                           MakeUintegerAccessor (&RoceDcqcn::m_byteCounter),
                           MakeUintegerChecker<uint64_t> ())
            .AddAttribute ("ClampTargetRate",
                           "true: every rate cut sets Rt <- Rc (DCQCN §3.1, the RP's "
                           "algorithm); false: only a cut that follows a rate-increase event "
                           "does, back-to-back cuts keep Rt (HPCC's simulator, rdma-hw.cc "
                           "CheckRateDecreaseMlx with CLAMP_TARGET_RATE 0, its mix/config.txt "
                           "and run.py setting)",
                           BooleanValue (true),
                           MakeBooleanAccessor (&RoceDcqcn::m_clampTargetRate),
                           MakeBooleanChecker ())
            .AddAttribute ("FastRecoverySteps",
                           "F: increase events of fast recovery before additive increase "
                           "(5: DCQCN §5 and rdma-hw.cc FastRecoveryTimes; mix/config.txt 1)",
                           UintegerValue (5),
                           MakeUintegerAccessor (&RoceDcqcn::m_fastRecoverySteps),
                           MakeUintegerChecker<uint32_t> ())
            .AddAttribute ("RateAi",
                           "Additive increase step R_AI (40 Mb/s: DCQCN §5; rdma-hw.cc 5 Mb/s, "
                           "mix/config.txt 50 Mb/s, run.py 5 Mb/s per 25 Gb/s of line rate)",
                           DataRateValue (DataRate ("40Mbps")),
                           MakeDataRateAccessor (&RoceDcqcn::m_rateAi), MakeDataRateChecker ())
            .AddAttribute ("RateHai",
                           "Hyper increase step R_HAI (100 Mb/s: HPCC's mix/config.txt; "
                           "rdma-hw.cc 50 Mb/s, run.py 50 Mb/s per 25 Gb/s of line rate)",
                           DataRateValue (DataRate ("100Mbps")),
                           MakeDataRateAccessor (&RoceDcqcn::m_rateHai), MakeDataRateChecker ())
            .AddAttribute ("MinRate",
                           "Lowest rate a decrease reaches (100 Mb/s: rdma-hw.cc MinRate and "
                           "mix/config.txt MIN_RATE; run.py 1000 Mb/s)",
                           DataRateValue (DataRate ("100Mbps")),
                           MakeDataRateAccessor (&RoceDcqcn::m_minRate), MakeDataRateChecker ())
            .AddTraceSource ("Rate", "Rc or Rt changed: (Rc, Rt) in bit/s",
                             MakeTraceSourceAccessor (&RoceDcqcn::m_rateTrace),
                             "ns3::RoceDcqcn::RateTracedCallback");
    return tid;
}

RoceDcqcn::RoceDcqcn () = default;

RoceDcqcn::~RoceDcqcn () = default;

void
RoceDcqcn::Start (RoceRateTarget* target, uint64_t lineRateBps, Time baseRtt, Time now)
{
    RoceCongestionControl::Start (target, lineRateBps, baseRtt, now);
    m_rcBps = m_rtBps = lineRateBps;
    m_alpha = 1.0;
    m_alphaRunning = false;
    m_recovering = false;
}

bool
RoceDcqcn::UsesEcn () const
{
    return true;
}

void
RoceDcqcn::Stop ()
{
    m_increaseEvent.Cancel ();
}

void
RoceDcqcn::DecayAlpha (Time now)
{
    if (!m_alphaRunning || now < m_alphaAnchor + m_alphaTimer)
    {
        return;
    }
    const int64_t periods = (now - m_alphaAnchor).GetTimeStep () / m_alphaTimer.GetTimeStep ();
    for (int64_t i = 0; i < periods && m_alpha > 0; ++i)
    {
        m_alpha *= 1 - m_g;
    }
    m_alphaAnchor += Time (m_alphaTimer.GetTimeStep () * periods);
}

double
RoceDcqcn::GetAlpha (Time now)
{
    DecayAlpha (now);
    return m_alpha;
}

void
RoceDcqcn::OnCnp (Time now)
{
    ++m_cnps;
    DecayAlpha (now);
    if (m_clampTargetRate || m_timerCount > 0 || m_byteCount > 0)
    {
        m_rtBps = m_rcBps;
    }
    const double decreased = static_cast<double> (m_rcBps) * (1 - m_alpha / 2);
    m_rcBps = std::max<uint64_t> (m_minRate.GetBitRate (), static_cast<uint64_t> (decreased));
    m_alpha = (1 - m_g) * m_alpha + m_g;
    m_alphaAnchor = now;
    m_alphaRunning = true;
    m_timerCount = 0;
    m_byteCount = 0;
    m_bytesSinceCount = 0;
    m_recovering = true;
    m_increaseEvent.Cancel ();
    m_increaseEvent =
        Simulator::Schedule (m_rateIncreaseTimer, &RoceDcqcn::RateIncreaseTimerExpired, this);
    Apply ();
}

void
RoceDcqcn::OnDataSent (uint32_t wireBytes, Time now)
{
    if (!m_recovering || m_byteCounter == 0)
    {
        return;
    }
    m_bytesSinceCount += wireBytes;
    if (m_bytesSinceCount >= m_byteCounter)
    {
        m_bytesSinceCount -= m_byteCounter;
        ++m_byteCount;
        IncreaseRate ();
    }
}

void
RoceDcqcn::RateIncreaseTimerExpired ()
{
    ++m_timerCount;
    IncreaseRate ();
    if (m_recovering)
    {
        m_increaseEvent =
            Simulator::Schedule (m_rateIncreaseTimer, &RoceDcqcn::RateIncreaseTimerExpired, this);
    }
}

void
RoceDcqcn::IncreaseRate ()
{
    const uint32_t f = m_fastRecoverySteps;
    // without a byte counter the stage is the timer's alone (bc reads as t)
    const uint32_t bc = m_byteCounter == 0 ? m_timerCount : m_byteCount;
    if (std::max (m_timerCount, bc) < f)
    {
        // fast recovery: Rt unchanged
    }
    else if (std::min (m_timerCount, bc) > f)
    {
        m_rtBps += m_rateHai.GetBitRate ();
    }
    else
    {
        m_rtBps += m_rateAi.GetBitRate ();
    }
    m_rtBps = std::min (m_rtBps, m_lineRateBps);
    // (Rt + Rc) / 2 rounded up, so that Rc reaches Rt instead of stopping 1 bit/s short
    m_rcBps = std::min ((m_rtBps + m_rcBps + 1) / 2, m_lineRateBps);
    if (m_rcBps == m_lineRateBps && m_rtBps == m_lineRateBps)
    {
        m_recovering = false; // back at line rate: nothing left to recover
        m_increaseEvent.Cancel ();
    }
    Apply ();
}

void
RoceDcqcn::Apply ()
{
    m_rateTrace (m_rcBps, m_rtBps);
    if (m_target != nullptr)
    {
        m_target->SetRateBps (m_rcBps);
    }
}

} // namespace ns3
