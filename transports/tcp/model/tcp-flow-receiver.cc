/*
 * disaggsim: the receiving end of the flows towards one host.
 */
#include "tcp-flow-receiver.h"

#include "topologies/model/fabric-header.h"

#include "ns3/inet-socket-address.h"
#include "ns3/log.h"
#include "ns3/packet.h"
#include "ns3/tcp-socket-factory.h"

namespace ns3
{

NS_LOG_COMPONENT_DEFINE ("TcpFlowReceiver");

TcpFlowReceiver::TcpFlowReceiver (Ptr<Node> node, uint16_t port,
                                  Callback<void, uint64_t> onFinished)
      : m_node (node)
      , m_port (port)
      , m_onFinished (onFinished)
{
}

void
TcpFlowReceiver::Listen ()
{
    m_listener = Socket::CreateSocket (m_node, TcpSocketFactory::GetTypeId ());
    NS_ABORT_MSG_IF (m_listener->Bind (InetSocketAddress (Ipv4Address::GetAny (), m_port)) != 0,
                     "TcpFlowReceiver: cannot bind port " << m_port);
    m_listener->Listen ();
    m_listener->SetAcceptCallback (MakeCallback (&TcpFlowReceiver::ConnectionRequest, this),
                                   MakeCallback (&TcpFlowReceiver::NewConnection, this));
}

void
TcpFlowReceiver::Expect (uint32_t srcHost, uint16_t srcPort, uint64_t flowIndex, uint64_t sizeBytes)
{
    m_expected[Key (srcHost, srcPort)] = Expected{flowIndex, sizeBytes};
}

void
TcpFlowReceiver::Stop ()
{
    for (auto& entry : m_connections)
    {
        entry.second.socket->SetRecvCallback (MakeNullCallback<void, Ptr<Socket>> ());
    }
    m_connections.clear ();
    if (m_listener)
    {
        m_listener->SetAcceptCallback (MakeNullCallback<bool, Ptr<Socket>, const Address&> (),
                                       MakeNullCallback<void, Ptr<Socket>, const Address&> ());
        m_listener->Close ();
        m_listener = nullptr;
    }
}

bool
TcpFlowReceiver::ConnectionRequest (Ptr<Socket> socket, const Address& from)
{
    return true;
}

void
TcpFlowReceiver::NewConnection (Ptr<Socket> socket, const Address& from)
{
    InetSocketAddress peer = InetSocketAddress::ConvertFrom (from);
    uint32_t srcHost = FabricHostFromIpv4Address (peer.GetIpv4 ());
    auto it = m_expected.find (Key (srcHost, peer.GetPort ()));
    if (it == m_expected.end ())
    {
        NS_LOG_WARN ("unexpected connection from " << peer.GetIpv4 () << ":" << peer.GetPort ());
        socket->Close ();
        return;
    }
    m_connections[PeekPointer (socket)] =
        Connection{it->second.flowIndex, it->second.sizeBytes, 0, socket};
    m_expected.erase (it);
    socket->SetRecvCallback (MakeCallback (&TcpFlowReceiver::Read, this));
    Read (socket); // data may have arrived with the handshake's last ACK
}

void
TcpFlowReceiver::Read (Ptr<Socket> socket)
{
    auto it = m_connections.find (PeekPointer (socket));
    if (it == m_connections.end ())
    {
        return;
    }
    Connection& connection = it->second;
    while (Ptr<Packet> packet = socket->Recv ())
    {
        if (packet->GetSize () == 0)
        {
            break;
        }
        connection.receivedBytes += packet->GetSize ();
    }
    if (connection.receivedBytes >= connection.sizeBytes)
    {
        uint64_t flowIndex = connection.flowIndex;
        socket->SetRecvCallback (MakeNullCallback<void, Ptr<Socket>> ());
        socket->Close ();
        m_connections.erase (it);
        m_onFinished (flowIndex);
    }
}

} // namespace ns3
