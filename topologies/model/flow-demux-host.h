/*
 * disaggsim: a host stack whose received frames go to a flow's sender or receiver by flow id.
 */
#ifndef DISAGGSIM_FLOW_DEMUX_HOST_H
#define DISAGGSIM_FLOW_DEMUX_HOST_H

#include "fabric-host.h"

#include "ns3/ptr.h"

#include <cstdint>
#include <tsl/robin_map.h>

namespace ns3
{

/**
 * \brief A FabricHost whose flows have one end object on each side, found by flow id: the
 * Sender on the host that sends the flow's data (it takes the flow's ACKs), the Receiver on
 * the host that receives it.  The connection lookup a socket demux does by 4-tuple, for
 * transports whose frames carry the flow id in the FabricHeader (pFabric, the lean TCP).
 *
 * The subclass registers each flow's ends as the flow starts (AddSender, AddReceiver),
 * forgets them when it finishes (RemoveSender, RemoveReceiver: late frames of the flow then
 * find nothing and are ignored), and in DoReceive picks the end by the frame's own flags
 * (FindSender, FindReceiver).  Both maps are open-addressing hash maps (tsl::robin_map): a
 * lookup is one probe into a flat array, which matters because every received frame does one
 * (std::unordered_map's modulo and node chase were 1.3 % of a heavy pFabric incast,
 * bench/RESULTS.md).  A template, not a TypeId'd class: it adds no attribute or trace source,
 * so a subclass's TypeId names FabricHost as its parent.
 */
template <typename Sender, typename Receiver>
class FlowDemuxHost : public FabricHost
{
  public:
    /// \p sender ends flow \p flowId on this host (a flow already registered is replaced).
    void AddSender (uint64_t flowId, Ptr<Sender> sender)
    {
        m_senders[flowId] = sender;
    }

    /// \p receiver ends flow \p flowId on this host (a flow already registered is replaced).
    void AddReceiver (uint64_t flowId, Ptr<Receiver> receiver)
    {
        m_receivers[flowId] = receiver;
    }

    /// Forget a finished flow's sender (its late frames are then ignored).
    void RemoveSender (uint64_t flowId)
    {
        m_senders.erase (flowId);
    }

    /// Forget a finished flow's receiver (its late frames are then ignored).
    void RemoveReceiver (uint64_t flowId)
    {
        m_receivers.erase (flowId);
    }

  protected:
    void DoDispose () override
    {
        m_senders.clear ();
        m_receivers.clear ();
        FabricHost::DoDispose ();
    }

    /// \returns the sender of flow \p flowId on this host, or nullptr if there is none.
    Sender* FindSender (uint64_t flowId) const
    {
        auto it = m_senders.find (flowId);
        return it == m_senders.end () ? nullptr : PeekPointer (it->second);
    }

    /// \returns the receiver of flow \p flowId on this host, or nullptr if there is none.
    Receiver* FindReceiver (uint64_t flowId) const
    {
        auto it = m_receivers.find (flowId);
        return it == m_receivers.end () ? nullptr : PeekPointer (it->second);
    }

  private:
    tsl::robin_map<uint64_t, Ptr<Sender>> m_senders;
    tsl::robin_map<uint64_t, Ptr<Receiver>> m_receivers;
};

} // namespace ns3

#endif // DISAGGSIM_FLOW_DEMUX_HOST_H
