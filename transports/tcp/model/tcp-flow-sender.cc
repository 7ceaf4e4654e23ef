/*
 * disaggsim: the sending end of one flow over an ns-3 TCP socket.
 */
#include "tcp-flow-sender.h"

#include "ns3/inet-socket-address.h"
#include "ns3/log.h"
#include "ns3/packet.h"
#include "ns3/tcp-socket-factory.h"

#include <algorithm>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE ("TcpFlowSender");

TcpFlowSender::TcpFlowSender (uint64_t flowIndex, const FlowSpec& flow, Ptr<Node> node,
                              const Address& remote, uint32_t mssBytes,
                              Callback<void, uint64_t, uint16_t> onBound)
      : m_flowIndex (flowIndex)
      , m_flow (flow)
      , m_node (node)
      , m_remote (remote)
      , m_mssBytes (mssBytes)
      , m_onBound (onBound)
{
}

void
TcpFlowSender::Open ()
{
    m_socket = Socket::CreateSocket (m_node, TcpSocketFactory::GetTypeId ());
    // A connection holds its port from its SYN to the end of TIME_WAIT, so a host can have
    // at most as many open connections as ns-3 has ephemeral ports (49152-65535: 16384).
    NS_ABORT_MSG_IF (m_socket->Bind () != 0,
                     "TcpFlowSender: no ephemeral port left on host "
                         << m_flow.srcHost << " for flow " << m_flow.flowId
                         << " (at most 16384 connections from one host at once)");
    Address local;
    m_socket->GetSockName (local);
    m_onBound (m_flowIndex, InetSocketAddress::ConvertFrom (local).GetPort ());
    m_socket->SetConnectCallback (MakeCallback (&TcpFlowSender::ConnectionSucceeded, this),
                                  MakeCallback (&TcpFlowSender::ConnectionFailed, this));
    m_socket->SetSendCallback (MakeCallback (&TcpFlowSender::SendSpaceAvailable, this));
    m_socket->Connect (m_remote);
}

void
TcpFlowSender::Start ()
{
    m_started = true;
    m_connectedAtStart = m_connected;
    if (m_connected)
    {
        Write ();
    }
}

void
TcpFlowSender::Release ()
{
    if (m_socket)
    {
        m_socket->SetConnectCallback (MakeNullCallback<void, Ptr<Socket>> (),
                                      MakeNullCallback<void, Ptr<Socket>> ());
        m_socket->SetSendCallback (MakeNullCallback<void, Ptr<Socket>, uint32_t> ());
        m_socket = nullptr;
    }
}

void
TcpFlowSender::ConnectionSucceeded (Ptr<Socket> socket)
{
    m_connected = true;
    if (m_started)
    {
        Write ();
    }
}

void
TcpFlowSender::ConnectionFailed (Ptr<Socket> socket)
{
    NS_LOG_WARN ("flow " << m_flow.flowId << ": connection failed");
}

void
TcpFlowSender::SendSpaceAvailable (Ptr<Socket> socket, uint32_t available)
{
    if (m_started && m_connected)
    {
        Write ();
    }
}

void
TcpFlowSender::Write ()
{
    while (m_writtenBytes < m_flow.sizeBytes)
    {
        uint64_t remaining = m_flow.sizeBytes - m_writtenBytes;
        uint64_t space = m_socket->GetTxAvailable ();
        uint64_t chunk = std::min (remaining, space);
        if (chunk < remaining)
        {
            // Whole segments only, so that TCP cuts the flow exactly like the ideal FCT does.
            chunk -= chunk % m_mssBytes;
        }
        if (chunk == 0)
        {
            return; // wait for SendSpaceAvailable
        }
        int sent = m_socket->Send (Create<Packet> (static_cast<uint32_t> (chunk)));
        if (sent <= 0)
        {
            return;
        }
        m_writtenBytes += static_cast<uint64_t> (sent);
    }
    m_socket->SetSendCallback (MakeNullCallback<void, Ptr<Socket>, uint32_t> ());
    m_socket->Close ();
}

} // namespace ns3
