/*
 * disaggsim: pFabric switch port: priority scheduling and priority dropping.
 */
#include "pfabric-queue.h"

#include "ns3/log.h"

#include <type_traits>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE ("PfabricQueue");
NS_OBJECT_ENSURE_REGISTERED (PfabricQueue);

TypeId
PfabricQueue::GetTypeId ()
{
    static TypeId tid = TypeId ("ns3::PfabricQueue")
                            .SetParent<FabricQueue> ()
                            .SetGroupName ("Disaggsim")
                            .AddConstructor<PfabricQueue> ();
    return tid;
}

PfabricQueue::PfabricQueue ()
{
    m_items.reserve (32);
}

PfabricQueue::~PfabricQueue ()
{
    Clear ();
}

void
PfabricQueue::DoDispose ()
{
    Clear ();
    FabricQueue::DoDispose ();
}

void
PfabricQueue::Clear ()
{
    for (const Slot& slot : m_items)
    {
        slot.packet->Unref ();
    }
    m_items.clear ();
    m_ingress.clear ();
    m_worst = kNone;
}

FabricQueueItem
PfabricQueue::TakeItem (std::size_t index)
{
    static_assert (std::is_trivially_copyable_v<Slot>, "erase must be a memmove");
    const Slot& slot = m_items[index];
    // The slot's reference goes to the item; its wire bytes from the packet (the slot keeps
    // 56 B, and pFabric's short queues keep the packet warm).
    Ptr<Packet> packet (slot.packet, false);
    const uint32_t wireBytes = slot.packet->GetSize () + kFabricHeaderBytes;
    FabricQueueItem item (packet, slot.header, TimeStep (slot.notBeforeStep), kFabricNoIngressPort,
                          wireBytes);
    m_items.erase (m_items.begin () + static_cast<std::ptrdiff_t> (index));
    if (!m_ingress.empty ())
    {
        item.ingressPort = m_ingress[index];
        m_ingress.erase (m_ingress.begin () + static_cast<std::ptrdiff_t> (index));
    }
    return item;
}

std::size_t
PfabricQueue::WorstIndex () const
{
    if (m_worst != kNone)
    {
        return m_worst;
    }
    // The last of the highest ranks, branch-free (see DoDequeue).
    std::size_t worst = 0;
    uint32_t worstRank = 0;
    const std::size_t n = m_items.size ();
    for (std::size_t i = 0; i < n; ++i)
    {
        const uint32_t rank = m_items[i].header.rank;
        const bool worse = rank >= worstRank;
        worst = worse ? i : worst;
        worstRank = worse ? rank : worstRank;
    }
    m_worst = worst;
    return worst;
}

bool
PfabricQueue::DoEnqueue (FabricQueueItem&& item)
{
    // The scan keeps the last of the highest ranks: the arrival is it if its rank is >=.
    if (m_worst != kNone && item.header.rank >= m_items[m_worst].header.rank)
    {
        m_worst = m_items.size ();
    }
    Packet* packet = PeekPointer (item.packet);
    packet->Ref (); // the slot's reference; item's own is released when it goes
    m_items.push_back (Slot{packet, item.header, item.notBefore.GetTimeStep ()});
    if (GetSharedBuffer () != nullptr)
    {
        m_ingress.push_back (item.ingressPort);
    }
    return true;
}

bool
PfabricQueue::HoldsFlow (uint32_t flowKey, uint16_t srcHost) const
{
    for (const Slot& item : m_items)
    {
        if (PfabricFlowKey (item.header.flowHash) == flowKey && item.header.srcHost == srcHost)
        {
            return true;
        }
    }
    return false;
}

bool
PfabricQueue::DoSelectVictim (const FabricQueueItem& arriving, FabricQueueItem& victim)
{
    std::size_t worst = WorstIndex ();
    if (arriving.header.rank >= m_items[worst].header.rank)
    {
        return false;
    }
    victim = TakeItem (worst);
    m_worst = kNone;
    return true;
}

bool
PfabricQueue::DoRefusesArrival (const FabricHeader& arriving) const
{
    // DoSelectVictim's refusal: the arrival is no more urgent than the least urgent frame.
    return arriving.rank >= m_items[WorstIndex ()].header.rank;
}

FabricQueueItem
PfabricQueue::DoDequeue (Time now)
{
    // The most urgent frame that may start now (the earliest on ties).  A cut-through
    // port is handed frames whose tail is still arriving (notBefore > now, see
    // FabricSwitch::Forward); committing to one of those while another is ready would
    // idle the port, so they compete only when nothing is ready, and then the first to
    // become ready goes (ties: the most urgent).
    // Branch-free: a frame that is not ready yet sorts after every ready one (bit 32 set),
    // and the first of the smallest keys wins, as a strict < in index order keeps it.
    // Which frame beats the running minimum is data-dependent; as a branch it mispredicted
    // on most new minima.
    const int64_t nowStep = now.GetTimeStep ();
    std::size_t best = 0;
    uint64_t bestKey = UINT64_MAX;
    const std::size_t n = m_items.size ();
    for (std::size_t i = 0; i < n; ++i)
    {
        const Slot& item = m_items[i];
        const uint64_t key = (uint64_t (item.notBeforeStep > nowStep) << 32) | item.header.rank;
        const bool better = key < bestKey;
        best = better ? i : best;
        bestKey = better ? key : bestKey;
    }
    if ((bestKey >> 32) != 0)
    {
        // Nothing is ready.
        best = 0;
        for (std::size_t i = 1; i < m_items.size (); ++i)
        {
            if (m_items[i].notBeforeStep < m_items[best].notBeforeStep ||
                (m_items[i].notBeforeStep == m_items[best].notBeforeStep &&
                 m_items[i].header.rank < m_items[best].header.rank))
            {
                best = i;
            }
        }
    }
    // ... names the flow whose earliest buffered frame goes first (SIGCOMM'13 §4.2).
    uint32_t flow = PfabricFlowKey (m_items[best].header.flowHash);
    uint16_t src = m_items[best].header.srcHost;
    std::size_t index = best;
    for (std::size_t i = 0; i < best; ++i)
    {
        if (PfabricFlowKey (m_items[i].header.flowHash) == flow && m_items[i].header.srcHost == src)
        {
            index = i;
            break;
        }
    }
    m_worst = kNone;
    return TakeItem (index);
}

} // namespace ns3
