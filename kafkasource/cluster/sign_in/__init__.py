"""Signing in to hosted Kafka with an OAUTHBEARER token that a provider named in the option oauthProvider makes:
AWS MSK IAM, Microsoft Entra ID, Google Cloud, or a function of the cluster owner's choosing."""
