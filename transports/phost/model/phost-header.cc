/*
 * disaggsim: the pHost packet header.
 */
#include "phost-header.h"

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED (PhostHeader);

TypeId
PhostHeader::GetTypeId ()
{
    static TypeId tid = TypeId ("ns3::PhostHeader")
                            .SetParent<Header> ()
                            .SetGroupName ("Disaggsim")
                            .AddConstructor<PhostHeader> ();
    return tid;
}

TypeId
PhostHeader::GetInstanceTypeId () const
{
    return GetTypeId ();
}

uint32_t
PhostHeader::GetSerializedSize () const
{
    return kPhostHeaderBytes;
}

void
PhostHeader::Serialize (Buffer::Iterator start) const
{
    start.WriteU8 (type);
    start.WriteHtonU64 (flowId);
    start.WriteHtonU32 (packet);
    start.WriteHtonU64 (sizeBytes);
    start.WriteU8 (0);
}

uint32_t
PhostHeader::Deserialize (Buffer::Iterator start)
{
    type = start.ReadU8 ();
    flowId = start.ReadNtohU64 ();
    packet = start.ReadNtohU32 ();
    sizeBytes = start.ReadNtohU64 ();
    start.ReadU8 ();
    return kPhostHeaderBytes;
}

void
PhostHeader::Print (std::ostream& os) const
{
    static const char* names[] = {"?", "RTS", "DATA", "TOKEN", "ACK", "DATA+RTS"};
    os << names[type <= DATA_RTS ? type : 0] << " flow " << flowId << " packet " << packet
       << " size " << sizeBytes;
}

} // namespace ns3
