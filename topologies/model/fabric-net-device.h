/*
 * disaggsim: a port of a fabric node (host NIC or switch port).
 */
#ifndef DISAGGSIM_FABRIC_NET_DEVICE_H
#define DISAGGSIM_FABRIC_NET_DEVICE_H

#include "fabric-header.h"
#include "fabric-queue.h"

#include "ns3/data-rate.h"
#include "ns3/mac48-address.h"
#include "ns3/net-device.h"
#include "ns3/nstime.h"
#include "ns3/random-variable-stream.h"
#include "ns3/traced-callback.h"

namespace ns3
{

class FabricChannel;
class FabricNetDevice;
class Node;

/**
 * \brief Where a fabric port hands received frames on the fast path: the port's switch or
 * transport host.
 *
 * A direct virtual call instead of an ns-3 Callback (a std::function plus a Ptr copy of the
 * port per frame): every received frame passes here, and the two layers cost ~2 % of a
 * pFabric run (bench/RESULTS.md "What moved the numbers").  The sink must outlive the port's
 * use of it; FabricSwitch and FabricHost own their ports and clear it in DoDispose.
 */
class FabricFrameSink
{
  public:
    virtual ~FabricFrameSink () = default;
    /// A frame arrived at \p port: its \p packet, \p header, and \p txTime, its serialization
    /// time on the incoming link; \p now is Simulator::Now () (the arrival event's own time,
    /// passed down so that the hop path reads the clock once).
    virtual void ReceiveFrame (FabricNetDevice* port, const Ptr<Packet>& packet,
                               const FabricHeader& header, Time txTime, Time now) = 0;
};

/**
 * \brief A fabric port: an egress FabricQueue, a serializer at DataRate, and a FabricChannel.
 *
 * Transmission of a frame of b wire bytes (packet + kFabricHeaderBytes = 18) takes
 * TxTime(b) = ceil(b * 8 / rate) picoseconds; it starts at max(now, end of the previous
 * transmission, item.notBefore) and the port is busy until it ends.  A host port accepts IPv4
 * packets from the node's Ipv4 stack (NeedsArp() == false) and builds the FabricHeader from the
 * IPv4/TCP/UDP headers: the destination host from the IPv4 address (FabricHostFromIpv4Address), ecn
 * from the TOS ECN bits, flowHash from the 5-tuple.  On reception at a host a CE frame carrying
 * IPv4 has CE set in its IPv4 header (RFC 6040 §4.2 decapsulation) before the packet goes up the
 * normal ns-3 protocol handlers.  Non-IP transports use SendFabric() and a fabric receive
 * callback instead; switch ports hand frames to FabricSwitch through that callback.
 *
 * With SendOverhead = J > 0, a frame handed to the port by its own host (Send, SendFabric; never
 * a frame forwarded by a switch) may not start before now + U[0, J]: the random source
 * processing time with which Floyd & Jacobson (1992, "On traffic phase effects in
 * packet-switched gateways") remove the phase effects of deterministic drop-tail simulations,
 * as ns-2's Agent/TCP overhead_ does.  The port stays FIFO, and a backlogged port is not slowed.
 */
class FabricNetDevice : public NetDevice
{
  public:
    static TypeId GetTypeId ();
    FabricNetDevice ();
    ~FabricNetDevice () override;

    /// Callback for frames received through the fast path: (device, packet, header, txTime
    /// of the frame on the incoming link).
    typedef Callback<void, Ptr<FabricNetDevice>, const Ptr<Packet>&, const FabricHeader&, Time>
        FabricReceiveCallback;

    /// Signature of the Tx and Rx trace sources.
    typedef void (*FrameTracedCallback) (Ptr<const Packet> packet, const FabricHeader& header);

    /// \returns the serialization time of \p wireBytes at \p bitRate: ceil(bits * 1e12 /
    /// rate) ps.  Shared with ClosTopology::IdealFct so that both use the same rounding.
    static Time TxTimeFor (uint64_t wireBytes, uint64_t bitRate);

    void Attach (Ptr<FabricChannel> channel);
    void SetQueue (Ptr<FabricQueue> queue);
    Ptr<FabricQueue> GetQueue () const;
    DataRate GetDataRate () const;
    void SetDataRate (DataRate rate);

    /// \returns the serialization time of a frame of \p wireBytes on this port (TxTimeFor,
    /// remembered for the last two frame sizes: a transport's data and control frames, so
    /// that most frames cost no 64-bit division).
    Time TxTime (uint64_t wireBytes)
    {
        if (wireBytes == m_txCacheBytes[0])
        {
            return m_txCacheTime[0];
        }
        if (wireBytes == m_txCacheBytes[1])
        {
            return m_txCacheTime[1];
        }
        const Time txTime = TxTimeFor (wireBytes, m_bitRate);
        m_txCacheBytes[1] = m_txCacheBytes[0];
        m_txCacheTime[1] = m_txCacheTime[0];
        m_txCacheBytes[0] = wireBytes;
        m_txCacheTime[0] = txTime;
        return txTime;
    }

    /// Make this a cut-through switch port: frames are delivered here \p switchingDelay after
    /// their head arrives.
    void SetCutThrough (Time switchingDelay);

    /// \returns the id of the node this port belongs to (cached for the channel's events).
    uint32_t GetNodeId () const
    {
        return m_nodeId;
    }

    bool IsCutThrough () const
    {
        return m_cutThrough;
    }

    Time GetCutThroughDelay () const
    {
        return m_cutThroughDelay;
    }

    /// Deliver received frames to \p callback instead of the node's protocol handlers.
    void SetFabricReceiveCallback (FabricReceiveCallback callback);

    /// Deliver received frames to \p sink (before any callback); nullptr detaches it.
    void SetFabricFrameSink (FabricFrameSink* sink)
    {
        m_frameSink = sink;
    }

    /// Send a frame whose fabric header the caller built (non-IP transports).
    bool SendFabric (const Ptr<Packet>& packet, const FabricHeader& header);

    /// SendFabric at \p now, which must be Simulator::Now () (a caller that holds it).
    bool SendFabric (const Ptr<Packet>& packet, const FabricHeader& header, Time now);

    /// SendFabric's outcome for a frame of \p wireBytes with \p header when the egress queue
    /// would drop it outright (FabricQueue::DropIfRefused): the drop is counted and the
    /// random draw of SendOverhead made as SendFabric would, and true returned; otherwise
    /// nothing happens and false is returned (then build the frame and SendFabric it).
    bool DropRefusedFabricFrame (const FabricHeader& header, uint32_t wireBytes);

    /// \returns the earliest start of a frame handed down now by this port's host: now + U[0,
    /// SendOverhead], or 0 (no constraint) when SendOverhead is 0.
    Time HostFrameNotBefore ();
    /// HostFrameNotBefore at \p now = Simulator::Now ().
    Time HostFrameNotBefore (Time now);

    /// Queue a frame for transmission that may not start before \p notBefore (switches).
    bool EnqueueFrame (const Ptr<Packet>& packet, const FabricHeader& header, Time notBefore);

    /// EnqueueFrame at \p now, which must be Simulator::Now () (the hop path passes it down).
    bool EnqueueFrame (const Ptr<Packet>& packet, const FabricHeader& header, Time notBefore,
                       Time now);

    /// Called by the channel when a frame arrives (see FabricChannel for the timing).
    void Receive (const Ptr<Packet>& packet, const FabricHeader& header, Time txTime);

    /// Receive at \p now, which must be Simulator::Now () (the arrival event's own time).
    void Receive (const Ptr<Packet>& packet, const FabricHeader& header, Time txTime, Time now);

    uint64_t GetTxPackets () const
    {
        return m_txPackets;
    }

    uint64_t GetRxPackets () const
    {
        return m_rxPackets;
    }

    /// \returns received frames whose header says they carry transport payload.
    uint64_t GetRxDataPackets () const
    {
        return m_rxDataPackets;
    }

    // NetDevice
    void SetIfIndex (const uint32_t index) override;
    uint32_t GetIfIndex () const override;
    Ptr<Channel> GetChannel () const override;
    void SetAddress (Address address) override;
    Address GetAddress () const override;
    bool SetMtu (const uint16_t mtu) override;
    uint16_t GetMtu () const override;
    bool IsLinkUp () const override;
    void AddLinkChangeCallback (Callback<void> callback) override;
    bool IsBroadcast () const override;
    Address GetBroadcast () const override;
    bool IsMulticast () const override;
    Address GetMulticast (Ipv4Address multicastGroup) const override;
    Address GetMulticast (Ipv6Address addr) const override;
    bool IsBridge () const override;
    bool IsPointToPoint () const override;
    bool Send (Ptr<Packet> packet, const Address& dest, uint16_t protocolNumber) override;
    bool SendFrom (Ptr<Packet> packet, const Address& source, const Address& dest,
                   uint16_t protocolNumber) override;
    Ptr<Node> GetNode () const override;
    void SetNode (Ptr<Node> node) override;
    bool NeedsArp () const override;
    void SetReceiveCallback (NetDevice::ReceiveCallback cb) override;
    void SetPromiscReceiveCallback (NetDevice::PromiscReceiveCallback cb) override;
    bool SupportsSendFrom () const override;

  protected:
    void DoDispose () override;

  private:
    bool BuildIpv4Header (Ptr<const Packet> packet, FabricHeader& header) const;
    /// Dequeue the next frame and Transmit it; \p now is the simulation time.
    void StartTransmission (Time now);
    /// Put \p item (just out of the queue) on the wire; schedule the next start if frames wait.
    void Transmit (const FabricQueueItem& item, Time now);
    /// The wire is free again; \p now = Simulator::Now () (the event's own time).
    void TransmitComplete (Time now);
    /// Schedule TransmitComplete at \p at = \p now + \p delay (a pooled event: one per busy
    /// port's frame).
    void ScheduleTransmitComplete (Time now, Time delay);

    // Members are grouped by use: the first block is what a frame's hop reads and writes
    // (EnqueueFrame, Transmit, TransmitComplete, Receive, the channel's peer lookups), kept
    // together so that a hop touches few cache lines of a port; at 1,152 hosts a frame
    // finds its port out of cache more often than not (bench/RESULTS.md, "Scaling in
    // hosts").  Order does not change behaviour.
    Ptr<FabricQueue> m_queue;
    Ptr<FabricChannel> m_channel;
    FabricFrameSink* m_frameSink{nullptr}; //!< fast-path receiver (not owned)
    Time m_busyUntil;                      //!< end of the current transmission
    Time m_cutThroughDelay;
    Time m_sendOverhead; //!< SendOverhead attribute (0 = deterministic)
    uint64_t m_bitRate{0};
    uint64_t m_txCacheBytes[2]{UINT64_MAX, UINT64_MAX}; //!< TxTime's last two frame sizes
    Time m_txCacheTime[2];                              //!< and their serialization times
    uint32_t m_nodeId{0};
    bool m_txCompletePending{false}; //!< a TransmitComplete event is scheduled
    bool m_cutThrough{false};
    uint64_t m_txPackets{0};
    uint64_t m_rxPackets{0};
    uint64_t m_rxDataPackets{0};
    TracedCallback<Ptr<const Packet>, const FabricHeader&> m_txTrace;
    TracedCallback<Ptr<const Packet>, const FabricHeader&> m_rxTrace;

    // cold: set-up, the IPv4 path and configuration
    Ptr<Node> m_node;
    DataRate m_dataRate;
    uint16_t m_mtu{1500};
    uint32_t m_ifIndex{0};
    Mac48Address m_address;
    Ptr<UniformRandomVariable> m_overheadRandom; //!< created at the first draw only
    NetDevice::ReceiveCallback m_rxCallback;
    NetDevice::PromiscReceiveCallback m_promiscCallback;
    FabricReceiveCallback m_fabricRxCallback;
};

} // namespace ns3

#endif // DISAGGSIM_FABRIC_NET_DEVICE_H
