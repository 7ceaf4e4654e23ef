/*
 * disaggsim: the pFabric stack of one host: its flows' endpoints on the host's fabric port.
 */
#ifndef DISAGGSIM_PFABRIC_HOST_H
#define DISAGGSIM_PFABRIC_HOST_H

#include "topologies/model/flow-demux-host.h"

#include "ns3/nstime.h"
#include "ns3/object.h"

namespace ns3
{

class FabricNetDevice;
class Packet;
class PfabricQueue;
class PfabricReceiver;
class PfabricSender;

/**
 * \brief Puts pFabric packets on a host's FabricNetDevice and hands arriving ones to the
 * flow's sender (ACKs) or receiver (data, probes), by flow id.
 *
 * pFabric runs directly on the fabric port (the FabricHost base: SendFabric and the fabric
 * receive callback): no IPv4 stack, no sockets.  The host's egress queue is the device's
 * (a PfabricQueue, as in YAPS where host NICs have the pFabric discipline too).
 */
class PfabricHost : public FlowDemuxHost<PfabricSender, PfabricReceiver>
{
  public:
    static TypeId GetTypeId ();
    PfabricHost ();
    ~PfabricHost () override;

    /// Attach to \p device, the port of host \p hostIndex (rack-major host number).
    void Setup (Ptr<FabricNetDevice> device, uint16_t hostIndex);

    /// \returns true if a data packet of flow \p flowId sent by this host still waits in the
    /// host's own NIC queue (not yet on the wire; Linux tcp_output.c skb_still_in_host_queue).
    bool NicHoldsFlow (uint64_t flowId) const;

  protected:
    void DoDispose () override;
    void DoSetup () override;
    void DoReceive (Ptr<Packet> packet, const FabricHeader& frame, Time now) override;

  private:
    Ptr<PfabricQueue> m_nicQueue; ///< the device's queue if it is a PfabricQueue
};

} // namespace ns3

#endif // DISAGGSIM_PFABRIC_HOST_H
