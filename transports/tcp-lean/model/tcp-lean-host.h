/*
 * disaggsim: the lean TCP stack of one host: its connections' ends on the host's fabric port.
 */
#ifndef DISAGGSIM_TCP_LEAN_HOST_H
#define DISAGGSIM_TCP_LEAN_HOST_H

#include "tcp-lean-receiver.h"
#include "tcp-lean-sender.h"
#include "topologies/model/flow-demux-host.h"

namespace ns3
{

/**
 * \brief Puts lean TCP frames on a host's FabricNetDevice and hands arriving ones to the
 * flow's sender (ACKs) or receiver (data), by flow id: the connection lookup that a socket
 * demux does by 4-tuple (no IPv4 stack, no sockets; doc/tcp-lean.md §1).
 */
class TcpLeanHost : public FlowDemuxHost<TcpLeanSender, TcpLeanReceiver>
{
  public:
    static TypeId GetTypeId ();
    TcpLeanHost ();
    ~TcpLeanHost () override;

    /// Attach to \p device, the port of host \p hostIndex (rack-major host number).
    void Setup (Ptr<FabricNetDevice> device, uint16_t hostIndex);

  protected:
    void DoReceive (Ptr<Packet> packet, const FabricHeader& frame, Time now) override;
};

} // namespace ns3

#endif // DISAGGSIM_TCP_LEAN_HOST_H
