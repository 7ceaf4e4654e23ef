/*
 * disaggsim: HPCC (Li et al. SIGCOMM'19 §3.3, Algorithm 1).
 */
#include "roce-hpcc.h"

#include "ns3/double.h"
#include "ns3/trace-source-accessor.h"
#include "ns3/uinteger.h"

#include <algorithm>

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED (RoceHpcc);

TypeId
RoceHpcc::GetTypeId ()
{
    static TypeId tid =
        TypeId ("ns3::RoceHpcc")
            .SetParent<RoceCongestionControl> ()
            .SetGroupName ("Disaggsim")
            .AddConstructor<RoceHpcc> ()
            .AddAttribute ("Eta",
                           "Target utilization η (0.95: HPCC SIGCOMM'19 §5; rdma-hw.cc "
                           "TargetUtil and mix/config.txt U_TARGET 0.95)",
                           DoubleValue (0.95), MakeDoubleAccessor (&RoceHpcc::m_eta),
                           MakeDoubleChecker<double> (0.01, 1))
            .AddAttribute ("MaxStage",
                           "Additive-increase stages before a multiplicative update "
                           "(5: HPCC §3.3/§5 and rdma-hw.cc MiThresh; mix/config.txt and "
                           "run.py MI_THRESH 0)",
                           UintegerValue (5), MakeUintegerAccessor (&RoceHpcc::m_maxStage),
                           MakeUintegerChecker<uint32_t> ())
            .AddAttribute ("RateAi",
                           "Additive increase as a rate: W_AI = RateAi x T (50 Mb/s: HPCC's "
                           "mix/config.txt RATE_AI; rdma-hw.cc 5 Mb/s, run.py 10 Mb/s per "
                           "25 Gb/s of line rate)",
                           DataRateValue (DataRate ("50Mbps")),
                           MakeDataRateAccessor (&RoceHpcc::m_rateAi), MakeDataRateChecker ())
            .AddAttribute ("MinRate",
                           "Lowest rate W/T reaches (100 Mb/s: rdma-hw.cc MinRate and "
                           "mix/config.txt MIN_RATE)",
                           DataRateValue (DataRate ("100Mbps")),
                           MakeDataRateAccessor (&RoceHpcc::m_minRate), MakeDataRateChecker ())
            .AddTraceSource ("Window", "W changed: (W in bytes, U)",
                             MakeTraceSourceAccessor (&RoceHpcc::m_windowTrace),
                             "ns3::RoceHpcc::WindowTracedCallback");
    return tid;
}

RoceHpcc::RoceHpcc () = default;

RoceHpcc::~RoceHpcc () = default;

bool
RoceHpcc::UsesInt () const
{
    return true;
}

void
RoceHpcc::Start (RoceRateTarget* target, uint64_t lineRateBps, Time baseRtt, Time now)
{
    m_target = target;
    m_lineRateBps = lineRateBps;
    m_baseRttSeconds = baseRtt.GetSeconds ();
    m_windowInitBytes = lineRateBps * m_baseRttSeconds / 8;
    m_windowAiBytes = m_rateAi.GetBitRate () * m_baseRttSeconds / 8;
    m_windowBytes = m_referenceWindowBytes = m_windowInitBytes;
    m_u = 0;
    m_incStage = 0;
    m_lastUpdateSeq = 0;
    m_haveRecords = false;
    target->SetRateBps (lineRateBps);
    target->SetWindowBytes (static_cast<uint64_t> (m_windowBytes));
}

double
RoceHpcc::MeasureInflight (const IntTag& ack)
{
    const uint32_t hops = std::min (ack.GetNHops (), m_records.GetNHops ());
    double largest = -1;
    double tauSeconds = 0;
    for (uint32_t i = 0; i < hops; ++i)
    {
        const IntHop& now = ack.GetHop (i);
        const IntHop& before = m_records.GetHop (i);
        if (now.timeNs <= before.timeNs || now.rateBps == 0)
        {
            continue; // no time passed at this hop: no rate to measure
        }
        const double dt = (now.timeNs - before.timeNs) * 1e-9;
        const double txRate = (now.txBytes - before.txBytes) * 8.0 / dt;
        const double bdpBits = static_cast<double> (now.rateBps) * m_baseRttSeconds;
        const double u = std::min (now.qlenBytes, before.qlenBytes) * 8.0 / bdpBits +
                         txRate / static_cast<double> (now.rateBps);
        if (u > largest)
        {
            largest = u;
            tauSeconds = dt;
        }
    }
    if (largest < 0)
    {
        return m_u;
    }
    tauSeconds = std::min (tauSeconds, m_baseRttSeconds);
    const double weight = tauSeconds / m_baseRttSeconds;
    return (1 - weight) * m_u + weight * largest;
}

double
RoceHpcc::ComputeWind (double u, bool updateWc)
{
    double window;
    if (u >= m_eta || m_incStage >= m_maxStage)
    {
        window = m_referenceWindowBytes / (u / m_eta) + m_windowAiBytes;
        if (updateWc)
        {
            m_incStage = 0;
        }
    }
    else
    {
        window = m_referenceWindowBytes + m_windowAiBytes;
        if (updateWc)
        {
            ++m_incStage;
        }
    }
    const double floor = m_minRate.GetBitRate () * m_baseRttSeconds / 8;
    window = std::clamp (window, floor, m_windowInitBytes);
    if (updateWc)
    {
        m_referenceWindowBytes = window;
    }
    return window;
}

void
RoceHpcc::OnAck (uint64_t ackSeq, const IntTag* intRecords, Time now)
{
    if (intRecords == nullptr || intRecords->GetNHops () == 0)
    {
        return;
    }
    if (!m_haveRecords)
    {
        m_records.CopyHops (*intRecords);
        m_haveRecords = true;
        m_lastUpdateSeq = m_target->GetSndNxt ();
        return;
    }
    m_u = MeasureInflight (*intRecords);
    const bool updateWc = ackSeq > m_lastUpdateSeq;
    m_windowBytes = ComputeWind (m_u, updateWc);
    if (updateWc)
    {
        m_lastUpdateSeq = m_target->GetSndNxt ();
    }
    m_records.CopyHops (*intRecords);
    m_windowTrace (m_windowBytes, m_u);
    m_target->SetWindowBytes (static_cast<uint64_t> (m_windowBytes));
    m_target->SetRateBps (static_cast<uint64_t> (m_windowBytes * 8 / m_baseRttSeconds));
}

} // namespace ns3
