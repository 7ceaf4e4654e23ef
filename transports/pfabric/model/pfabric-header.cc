/*
 * disaggsim: what a pFabric packet carries besides the fabric frame header.
 */
#include "pfabric-header.h"

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED (PfabricHeader);

TypeId
PfabricHeader::GetTypeId ()
{
    static TypeId tid = TypeId ("ns3::PfabricHeader")
                            .SetParent<Header> ()
                            .SetGroupName ("Disaggsim")
                            .AddConstructor<PfabricHeader> ();
    return tid;
}

TypeId
PfabricHeader::GetInstanceTypeId () const
{
    return GetTypeId ();
}

uint32_t
PfabricHeader::GetSerializedSize () const
{
    return kPfabricHeaderBytes;
}

void
PfabricHeader::Serialize (Buffer::Iterator start) const
{
    start.WriteHtonU64 (flowId);
    start.WriteHtonU32 (seq);
    start.WriteHtonU32 (sackSeq);
    start.WriteU8 (flags);
    start.WriteU8 (0, kPfabricHeaderBytes - 17);
}

uint32_t
PfabricHeader::Deserialize (Buffer::Iterator start)
{
    flowId = start.ReadNtohU64 ();
    seq = start.ReadNtohU32 ();
    sackSeq = start.ReadNtohU32 ();
    flags = start.ReadU8 ();
    start.Next (kPfabricHeaderBytes - 17);
    return kPfabricHeaderBytes;
}

void
PfabricHeader::Print (std::ostream& os) const
{
    os << "flow=" << flowId << " seq=" << seq << " sack=" << sackSeq
       << " flags=" << static_cast<uint32_t> (flags);
}

} // namespace ns3
