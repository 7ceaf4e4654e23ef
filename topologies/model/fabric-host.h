/*
 * disaggsim: a transport's stack on one host's raw fabric port (no IPv4): send frames, demux
 * received ones by protocol number.
 */
#ifndef DISAGGSIM_FABRIC_HOST_H
#define DISAGGSIM_FABRIC_HOST_H

#include "fabric-header.h"
#include "fabric-net-device.h"

#include "ns3/nstime.h"
#include "ns3/object.h"
#include "ns3/packet.h"

namespace ns3
{

/**
 * \brief Base of the per-host stack of a transport that runs directly on the fabric port
 * (FabricNetDevice::SendFabric and the fabric receive callback), such as pFabric and pHost.
 *
 * It attaches to the host's port, sends frames (counting the ones the host's own NIC queue
 * refuses), drops received frames of another protocol number, and hands the others to the
 * subclass's DoReceive, which demultiplexes them by the flow id of its own header to the
 * flow's sender or receiver.
 */
class FabricHost : public Object, public FabricFrameSink
{
  public:
    static TypeId GetTypeId ();
    FabricHost ();
    ~FabricHost () override;

    /// Attach to \p device, the port of host \p hostIndex (rack-major host number); frames
    /// whose FabricHeader::protocol is not \p protocol are ignored.
    void Setup (Ptr<FabricNetDevice> device, uint16_t hostIndex, uint16_t protocol);

    uint16_t GetHostIndex () const
    {
        return m_hostIndex;
    }

    Ptr<FabricNetDevice> GetDevice () const
    {
        return m_device;
    }

    /// Queue \p packet with \p frame at the host's port.  \returns false if the host's own
    /// NIC queue dropped it (counted in GetNicDrops).
    bool Send (Ptr<Packet> packet, const FabricHeader& frame);

    /// Send at \p now, which must be Simulator::Now () (a caller that holds it).
    bool Send (Ptr<Packet> packet, const FabricHeader& frame, Time now);

    /// Ask the host's NIC queue before building a frame: if it would refuse a frame of
    /// \p packetBytes (without the fabric header) with \p frame outright, count the drop as
    /// Send would (FabricNetDevice::DropRefusedFabricFrame) and return true.
    bool DropsAtNic (const FabricHeader& frame, uint32_t packetBytes);

    /// \returns frames handed to Send that the host's NIC queue refused.
    uint64_t GetNicDrops () const
    {
        return m_nicDrops;
    }

  protected:
    void DoDispose () override;
    /// Count a frame the host's NIC queue refused that the subclass queued itself.
    void CountNicDrop ()
    {
        ++m_nicDrops;
    }
    /// Called after Setup attached the port (e.g. to look at the NIC queue's type).
    virtual void DoSetup ();
    /// A frame of this host's protocol arrived at \p now (= Simulator::Now ()).
    virtual void DoReceive (Ptr<Packet> packet, const FabricHeader& frame, Time now) = 0;

    /// A frame arrived at the host's port (FabricFrameSink): another protocol's is dropped,
    /// this protocol's goes to DoReceive, with the arrival's packet reference (TakePtr).
    void ReceiveFrame (FabricNetDevice* device, Ptr<Packet>& packet, const FabricHeader& frame,
                       Time txTime, Time now, uint32_t wireBytes) override;

  private:
    Ptr<FabricNetDevice> m_device;
    uint16_t m_hostIndex{0};
    uint16_t m_protocol{0};
    uint64_t m_nicDrops{0};
};

} // namespace ns3

#endif // DISAGGSIM_FABRIC_HOST_H
