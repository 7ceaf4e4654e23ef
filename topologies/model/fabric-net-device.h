/*
 * disaggsim: a port of a fabric node (host NIC or switch port).
 */
#ifndef DISAGGSIM_FABRIC_NET_DEVICE_H
#define DISAGGSIM_FABRIC_NET_DEVICE_H

#include "fabric-header.h"
#include "fabric-queue.h"

#include "ns3/data-rate.h"
#include "ns3/event-id.h"
#include "ns3/mac48-address.h"
#include "ns3/net-device.h"
#include "ns3/nstime.h"
#include "ns3/random-variable-stream.h"
#include "ns3/traced-callback.h"

#include <array>
#include <deque>
#include <memory>

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
    /// passed down so that the hop path reads the clock once); \p wireBytes, its wire bytes
    /// (packet + kFabricHeaderBytes), carried with the frame.  The sink may take \p packet's
    /// reference (TakePtr: a switch moves it on without loading the Packet).
    virtual void ReceiveFrame (FabricNetDevice* port, Ptr<Packet>& packet,
                               const FabricHeader& header, Time txTime, Time now,
                               uint32_t wireBytes) = 0;
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
 *
 * Pause (IEEE 802.1Qbb priority flow control): Pause (c) stops the port from starting frames
 * of traffic class c (the frame on the wire finishes), Resume (c) lets it go on and restarts
 * an idle port.  A MAC control frame (EtherType 0x8808 carrying a PfcHeader; it travels as
 * the header's fields, kPfcFrameBytes on the wire) goes by
 * FabricChannel::TransmitPfc to the peer port's ReceivePfc and is consumed
 * there, never handed to the switch or host (nor costing data frames a check): a pause time of q quanta pauses its
 * classes for q x 512 bit times at this port's rate (a later frame replaces the timer), 0
 * resumes them (IEEE 802.1Qbb §36.1.3.2, 802.3 Annex 31D).  SendPfc puts such a frame on
 * the wire ahead of every queued data frame, after the one being sent (a MAC control frame
 * is not queued behind data, IEEE 802.3 Annex 31B.3; HPCC's simulator likewise sends it from
 * its never-paused queue 0).  Nothing of this runs or costs a frame anything until a pause
 * is sent or received.
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

    /// EnqueueFrame at \p now, which must be Simulator::Now () (the hop path passes it down);
    /// a switch forwarding a frame names the port it came in through, \p ingressPort.
    bool EnqueueFrame (const Ptr<Packet>& packet, const FabricHeader& header, Time notBefore,
                       Time now, uint32_t ingressPort = kFabricNoIngressPort);

    /// EnqueueFrame of a built \p item (its wireBytes set) at \p now = Simulator::Now (): a
    /// switch's forwarding path, which moves the item's packet on without loading it.
    bool EnqueueFrame (FabricQueueItem&& item, Time now);

    /// Called by the channel when a frame arrives (see FabricChannel for the timing).
    void Receive (const Ptr<Packet>& packet, const FabricHeader& header, Time txTime);

    /// Receive at \p now, which must be Simulator::Now () (the arrival event's own time).
    void Receive (const Ptr<Packet>& packet, const FabricHeader& header, Time txTime, Time now);

    /// Receive from the channel: \p wireBytes are the frame's (carried with it), and a switch
    /// may take \p packet's reference (FabricFrameSink::ReceiveFrame).
    void Receive (Ptr<Packet>& packet, const FabricHeader& header, Time txTime, Time now,
                  uint32_t wireBytes);

    /// Stop starting frames of traffic class \p trafficClass (0..7) until Resume.
    void Pause (uint8_t trafficClass);
    /// Pause at \p now = Simulator::Now ().
    void Pause (uint8_t trafficClass, Time now);
    /// Let frames of \p trafficClass go again; an idle port with a frame to send starts it.
    void Resume (uint8_t trafficClass);
    /// Resume at \p now = Simulator::Now ().
    void Resume (uint8_t trafficClass, Time now);

    /// \returns bit c set while traffic class c is paused.
    uint8_t GetPausedClasses () const
    {
        return m_pausedClasses;
    }

    /**
     * Send a PFC frame (kPfcFrameBytes on the wire) to the port at the other end of the
     * cable: the classes of \p classEnable get \p quanta (0 = resume).  It leaves before any
     * queued frame, once the frame on the wire is done.
     */
    void SendPfc (uint8_t classEnable, uint16_t quanta);

    /// A PFC frame from the cable (FabricChannel::TransmitPfc), as its fields: pause time
    /// \p quanta (0 = resume) for each class of \p classEnable; \p now = Simulator::Now ().
    /// The fields are a PfcHeader's; the frame is consumed here, never reaching the switch.
    void ReceivePfc (uint8_t classEnable, uint16_t quanta, Time now);

    /// \returns the PFC frames this port sent (SendPfc).
    uint64_t GetPfcFramesSent () const;
    /// \returns the PFC frames this port received.
    uint64_t GetPfcFramesReceived () const;
    /// \returns how long \p trafficClass has been paused in total, the current pause included.
    Time GetPausedTime (uint8_t trafficClass) const;

    /// Signature of the PfcTx / PfcRx trace sources: the class-enable vector and the quanta.
    typedef void (*PfcTracedCallback) (uint8_t classEnable, uint16_t quanta);

    /// The index of this port on its switch (FabricSwitch::AddPort); kFabricNoIngressPort
    /// for a host port.  Frames it receives are charged to it (FabricQueueItem::ingressPort).
    uint32_t GetSwitchPortIndex () const
    {
        return m_switchPortIndex;
    }

    void SetSwitchPortIndex (uint32_t index)
    {
        m_switchPortIndex = index;
    }

    uint64_t GetTxPackets () const
    {
        return m_txPackets;
    }

    uint64_t GetRxPackets () const
    {
        return m_rxPackets;
    }

    /// \returns the wire bytes this port has put on the wire (data frames; an INT record's
    /// txBytes).
    uint64_t GetTxBytes () const
    {
        return m_txBytes;
    }

    /// \returns the end of the current (or last) transmission: the port is busy before it.
    Time GetBusyUntil () const
    {
        return m_busyUntil;
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
    /// Put \p item (just out of the queue) on the wire, its packet's reference moved to the
    /// channel; schedule the next start if frames wait.
    void Transmit (FabricQueueItem& item, Time now);
    /// Append this port's INT record to the records of the frame with \p header
    /// (IntRecords::At (IntFrameKey): a frame with intRequested starting at \p start at a
    /// switch port).
    void StampInt (const FabricHeader& header, Time start);
    /// The wire is free again; \p now = Simulator::Now () (the event's own time).
    void TransmitComplete (Time now);
    /// Schedule TransmitComplete at \p at = \p now + \p delay (a pooled event: one per busy
    /// port's frame).
    void ScheduleTransmitComplete (Time now, Time delay);
    /// A frame became sendable at \p now: start it if the port is idle, else make sure the
    /// end of the current transmission starts the next one.
    void RestartIfIdle (Time now);
    /// \returns true if a MAC control frame waits to be sent.
    bool HasControlFrame () const
    {
        return m_controlPending; // a hot flag: m_pfc lives in the port's cold lines
    }
    /// Put the first waiting MAC control frame on the wire (StartTransmission's cold path).
    void TransmitControlFrame (Time now);
    /// StartTransmission when a control frame waits or a class is paused.
    void StartTransmissionSlow (Time now);
    /// The pause of \p trafficClass ran out (its timer).
    void PauseExpired (uint8_t trafficClass);

    /// Cold per-port PFC state, created at the first pause sent or received.
    struct PfcState
    {
        /// A PFC frame waiting to be sent, and what it says (for the PfcTx trace).
        struct ControlFrame
        {
            uint8_t classEnable;
            uint16_t quanta;
        };

        std::deque<ControlFrame> control; //!< MAC control frames waiting to be sent
        std::array<EventId, kFabricTrafficClasses> expiry; //!< pause timers
        std::array<Time, kFabricTrafficClasses> pausedSince;
        std::array<Time, kFabricTrafficClasses> pausedTotal;
        uint64_t sent{0};
        uint64_t received{0};
    };

    PfcState& Pfc ();
    /// ReceivePfc's work for one class it names.
    void ReceivePfcClass (uint8_t trafficClass, uint16_t quanta, Time now);

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
    uint8_t m_pausedClasses{0}; //!< bit c: traffic class c is paused (PFC)
    bool m_controlPending{false}; //!< m_pfc->control is not empty
    uint32_t m_switchPortIndex{kFabricNoIngressPort};
    uint64_t m_txPackets{0};
    uint64_t m_txBytes{0}; //!< wire bytes of data frames sent (INT txBytes)
    uint64_t m_rxPackets{0};
    uint64_t m_rxDataPackets{0};
    TracedCallback<Ptr<const Packet>, const FabricHeader&> m_txTrace;
    TracedCallback<Ptr<const Packet>, const FabricHeader&> m_rxTrace;

    // cold: set-up, the IPv4 path, PFC and configuration
    std::unique_ptr<PfcState> m_pfc;
    TracedCallback<uint8_t, uint16_t> m_pfcTxTrace;
    TracedCallback<uint8_t, uint16_t> m_pfcRxTrace;
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
