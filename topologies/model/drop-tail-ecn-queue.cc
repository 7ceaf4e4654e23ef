/*
 * disaggsim: byte-limited FIFO with DCTCP-style ECN marking.
 */
#include "drop-tail-ecn-queue.h"

#include "ns3/log.h"
#include "ns3/uinteger.h"

namespace ns3
{

NS_LOG_COMPONENT_DEFINE ("DropTailEcnQueue");
NS_OBJECT_ENSURE_REGISTERED (DropTailEcnQueue);

TypeId
DropTailEcnQueue::GetTypeId ()
{
    static TypeId tid =
        TypeId ("ns3::DropTailEcnQueue")
            .SetParent<FabricQueue> ()
            .SetGroupName ("Disaggsim")
            .AddConstructor<DropTailEcnQueue> ()
            .AddAttribute ("MarkThresholdBytes",
                           "DCTCP marking threshold K in wire bytes: an ECT frame arriving when "
                           "the occupancy exceeds K is CE-marked (Alizadeh et al. SIGCOMM'10 "
                           "§3.1); 0 disables marking",
                           UintegerValue (0),
                           MakeUintegerAccessor (&DropTailEcnQueue::m_markThresholdBytes),
                           MakeUintegerChecker<uint32_t> ());
    return tid;
}

DropTailEcnQueue::DropTailEcnQueue () = default;

DropTailEcnQueue::~DropTailEcnQueue () = default;

bool
DropTailEcnQueue::DoEnqueue (FabricQueueItem&& item)
{
    uint32_t bytesBefore = GetNBytes ();
    if (m_markThresholdBytes != 0 && bytesBefore > m_markThresholdBytes && item.header.IsEct ())
    {
        item.header.ecn = FabricEcn::CE;
        NotifyMarked (item, bytesBefore);
    }
    m_items.push_back (std::move (item));
    return true;
}

FabricQueueItem
DropTailEcnQueue::DoDequeue (Time /* now */)
{
    FabricQueueItem item = std::move (m_items.front ());
    m_items.pop_front ();
    if (!m_items.empty ())
    {
        // The next frame leaves at this port's next dequeue, one frame time on; its item was
        // written when it arrived, long enough ago on a paused fabric to be out of cache
        // (that load was 88 % of this function's samples, bench/RESULTS.md "Speed, second
        // sitting").  Fetched now, it is in cache then.  No effect on results.
        __builtin_prefetch (&m_items.front ());
    }
    return item;
}

} // namespace ns3
