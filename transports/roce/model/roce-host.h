/*
 * disaggsim: the RoCE NIC of one host: its queue pairs' endpoints on the host's fabric port
 * and the NIC's scheduler among sending QPs.
 */
#ifndef DISAGGSIM_ROCE_HOST_H
#define DISAGGSIM_ROCE_HOST_H

#include "topologies/model/fabric-host.h"
#include "topologies/model/fabric-queue.h"


#include <tsl/robin_map.h>

#include <vector>

namespace ns3
{

class RoceReceiver;
class RoceSender;

/**
 * \brief The RDMA NIC of a host, on the host's FabricNetDevice (no IP stack).
 *
 * Control frames (ACK, NACK, CNP, READ request) go to the port at once.  Data comes from the
 * active sending QPs through one scheduler, as a NIC's QP scheduler (HPCC's simulator,
 * qbb-net-device.cc RdmaEgressQueue): whenever the port's egress queue is empty, the next QP
 * in round-robin order whose pacer and window allow hands one packet to the port; so the
 * port holds at most one data frame waiting (a paused port holds it, and the QPs wait).  If
 * no QP is eligible yet, the scheduler wakes at the earliest pacer time; if the port is
 * backlogged, at the port's next dequeue, where the next frame goes into the port's queue
 * at once (so QPs at line rate are clocked by the port itself, with no event of their own).  Frames that arrive are handed to the flow's
 * sender (ACK, NACK, CNP, READ request) or receiver (data) by flow id.
 */
class RoceHost : public FabricHost, private FabricDequeueListener
{
  public:
    static TypeId GetTypeId ();
    RoceHost ();
    ~RoceHost () override;

    void Setup (Ptr<FabricNetDevice> device, uint16_t hostIndex);
    void AddSender (uint64_t flowId, Ptr<RoceSender> sender);
    void AddReceiver (uint64_t flowId, Ptr<RoceReceiver> receiver);
    void RemoveSender (uint64_t flowId);
    void RemoveReceiver (uint64_t flowId);

    /// \p sender may have a packet to send (started, window opened, rate changed).
    void Activate (RoceSender* sender);
    /// Hand a frame to the port at \p now.
    void SendFrame (Ptr<Packet> packet, const FabricHeader& frame, Time now);

    /**
     * \returns this host's Packet of \p bytes zero-filled bytes, the placeholder that every
     * frame of that size this host sends carries: RoCE's headers and payload travel in the
     * FabricHeader (out of band), so a Packet stands only for the frame's size, and the
     * fabric reads that from the frame's wire bytes (FabricQueueItem::wireBytes).  Shared,
     * immutable (nothing adds to or removes from a RoCE frame's packet), made once per size:
     * no Packet is allocated and freed per frame, and the one a receiver releases is warm,
     * where a frame's own Packet had gone cold crossing a paused fabric (bench/RESULTS.md
     * "Speed, second sitting").  Frames of one size share a uid, so INT records are keyed by
     * the frame (IntFrameKey), not by the Packet.
     */
    Ptr<Packet> FramePacket (uint32_t bytes);

  protected:
    void DoDispose () override;
    void DoSetup () override;
    void DoReceive (Ptr<Packet> packet, const FabricHeader& frame, Time now) override;

  private:
    /// Hand data packets to the port while it has room and QPs are eligible.
    void Schedule ();
    /// Run Schedule at \p at (pooled event, no EventId; a stale wake, \p at != m_wakeAt,
    /// does nothing).
    void ArmWake (Time at, Time now);
    void WakeAt (Time at);
    /// The NIC queue took a frame (FabricDequeueListener: a direct call on every frame's path).
    void NotifyDequeue (const FabricQueueItem& item, uint32_t bytesBefore) override;
    /// \returns the next QP in round-robin order that may send at \p now (and moves the
    /// round-robin position past it), or nullptr.
    RoceSender* NextEligible (Time now);

    Ptr<FabricQueue> m_nicQueue;
    std::vector<Ptr<RoceSender>> m_active; //!< QPs with data left, in round-robin order
    size_t m_next{0};                      //!< round-robin position in m_active
    Time m_wakeAt{Time::Max ()}; //!< the pending wake (Time::Max: none)
    bool m_waitDequeue{false}; //!< the port is backlogged: Schedule at its next dequeue
    bool m_scheduling{false};  //!< inside Schedule (no re-entry)
    bool m_dataWaiting{false}; //!< a data frame waits in the port's queue (at most one)
    tsl::robin_map<uint64_t, Ptr<RoceSender>> m_senders;
    tsl::robin_map<uint64_t, Ptr<RoceReceiver>> m_receivers;
    std::vector<Ptr<Packet>> m_framePackets; //!< FramePacket's, by size in bytes (null: none yet)
};

} // namespace ns3

#endif // DISAGGSIM_ROCE_HOST_H
