/*
 * disaggsim: the congestion-control seam of a RoCE queue pair; `none` (line rate, PFC alone).
 */
#include "roce-cc.h"

#include <limits>

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED (RoceCongestionControl);

TypeId
RoceCongestionControl::GetTypeId ()
{
    static TypeId tid = TypeId ("ns3::RoceCongestionControl")
                            .SetParent<Object> ()
                            .SetGroupName ("Disaggsim")
                            .AddConstructor<RoceCongestionControl> ();
    return tid;
}

RoceCongestionControl::RoceCongestionControl () = default;

RoceCongestionControl::~RoceCongestionControl () = default;

void
RoceCongestionControl::DoDispose ()
{
    Stop ();
    m_target = nullptr;
    Object::DoDispose ();
}

void
RoceCongestionControl::Start (RoceRateTarget* target, uint64_t lineRateBps, Time baseRtt,
                              Time now)
{
    m_target = target;
    m_lineRateBps = lineRateBps;
    target->SetRateBps (lineRateBps);
    target->SetWindowBytes (std::numeric_limits<uint64_t>::max ());
}

void
RoceCongestionControl::OnDataSent (uint32_t wireBytes, Time now)
{
}

void
RoceCongestionControl::OnAck (uint64_t ackSeq, const IntTag* intRecords, Time now)
{
}

void
RoceCongestionControl::OnCnp (Time now)
{
}

void
RoceCongestionControl::Stop ()
{
}

bool
RoceCongestionControl::UsesEcn () const
{
    return false;
}

bool
RoceCongestionControl::UsesInt () const
{
    return false;
}

} // namespace ns3
